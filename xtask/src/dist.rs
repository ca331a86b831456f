//! `cargo xtask dist`: builds the SPA into `dist/` — content-hashed wasm, JS glue and CSS under
//! `dist/assets/`, `index.html` pointing at them, `public/` copied as-is, and `.br`/`.gz`
//! siblings so the server can send precompressed bytes.
//!
//! The linked module is split at leptos' `#[lazy]` functions (lazy routes and components) before
//! wasm-bindgen: the main module is what `/` loads; each lazy function's code, and chunks several
//! of them share, become `assets/tower-<label>-<hash>.wasm`, fetched by the split loader
//! (`assets/tower-split-<hash>.js`, imported by the glue) the first time they are needed.

use std::fs;
use std::io::Write;
use std::path::{Path, PathBuf};

use anyhow::{Context, Result, bail, ensure};
use sha2::{Digest, Sha256};

use crate::util::{self, display_path, repo_root};

/// The rustc target the SPA compiles to.
const WASM_TARGET: &str = "wasm32-unknown-unknown";

/// Base name of every generated asset: `tower-<hash>.{wasm,js,css}`.
const OUT_NAME: &str = "tower";

/// Oldest binaryen that handles the features rustc emits by default; older ones (Debian's 108)
/// write modules that fail to instantiate instead of refusing them.
const MIN_WASM_OPT_VERSION: u32 = 116;

/// The features rustc 1.95 enables by default for wasm32-unknown-unknown (LLVM's `generic` CPU),
/// exactly the module's `target_features` section as `wasm-opt --print-features` lists it.
/// wasm-opt would read that section itself, but stating them keeps the build working if a tool
/// strips the section; all of them ship in Chromium since 2021.
const WASM_OPT_FEATURES: &[&str] = &[
    "--enable-bulk-memory",
    "--enable-bulk-memory-opt",
    "--enable-call-indirect-overlong",
    "--enable-nontrapping-float-to-int",
    "--enable-sign-ext",
    "--enable-mutable-globals",
    "--enable-reference-types",
    "--enable-multivalue",
];

/// Makes wasm-ld keep relocations in the module, which the splitter needs to move functions and
/// data between modules. Appended to the `rustflags` of `.cargo/config.toml` (cargo joins arrays).
const EMIT_RELOCS: &str =
    r#"target.wasm32-unknown-unknown.rustflags=["-Clink-args=--emit-relocs"]"#;

/// The splitter's loader module as the split wasm imports it, relative to the JS glue.
const LINK_MODULE: &str = "./__wasm_split.js";

/// The JS glue as the splitter's loader module imports it (`initSync`), before hashing.
const GLUE_MODULE: &str = "./tower.js";

/// First-load budget for wasm + JS + CSS after brotli, in bytes (decimal kilobytes, as
/// network budgets are usually quoted).
const FIRST_LOAD_BUDGET: u64 = 300_000;

/// Builds the SPA into `dist/`. `index_template` overrides `app/index.html`.
pub fn dist(index_template: Option<&Path>) -> Result<()> {
    let root = repo_root();
    let lock = fs::read_to_string(root.join("Cargo.lock")).context("reading Cargo.lock")?;
    let bindgen_version = check_bindgen_versions(&lock)?;

    ensure_wasm_target()?;
    util::ensure_node_modules()?;
    let wasm_opt = root.join("end2end/node_modules/.bin/wasm-opt");
    check_wasm_opt(&wasm_opt)?;

    let mut build = util::cargo([
        "build",
        "-p",
        "app",
        "--lib",
        "--target",
        WASM_TARGET,
        "--profile",
        "wasm-release",
        "--config",
        EMIT_RELOCS,
    ]);
    util::run(&mut build)?;

    let target_dir = target_dir();
    let raw_wasm = target_dir.join(WASM_TARGET).join("wasm-release/app.wasm");
    let staging = target_dir.join("xtask/dist");
    recreate_dir(&staging)?;

    let split_dir = staging.join("split");
    let main_wasm = split_dir.join("main.wasm");
    let split = split_wasm(&raw_wasm, &split_dir, &main_wasm)?;

    println!("$ wasm-bindgen {bindgen_version} (library) --target web --out-name {OUT_NAME}");
    wasm_bindgen_cli_support::Bindgen::new()
        .input_path(&main_wasm)
        .web(true)?
        .omit_default_module_path(false)
        // The split loader hands the lazy modules `__indirect_function_table`, which bindgen
        // would otherwise unexport as unused.
        .keep_lld_exports(true)
        .out_name(OUT_NAME)
        .typescript(false)
        .generate(&staging)
        .with_context(|| format!("wasm-bindgen on {}", display_path(&raw_wasm)))?;

    // The main module and every lazy one, optimized side by side: wasm-opt runs each on one core, and the
    // lazy modules are many.
    let optimized = staging.join(format!("{OUT_NAME}_opt.wasm"));
    let mut jobs = vec![(
        staging.join(format!("{OUT_NAME}_bg.wasm")),
        optimized.clone(),
    )];
    let mut lazy_modules = Vec::new();
    for module in &split.split_modules {
        let stem = module
            .file_stem()
            .and_then(|s| s.to_str())
            .with_context(|| format!("odd split module name {}", display_path(module)))?;
        let opt = staging.join(format!("{stem}_opt.wasm"));
        jobs.push((module.clone(), opt.clone()));
        lazy_modules.push((stem.to_owned(), opt));
    }
    optimize_all(&wasm_opt, &jobs)?;

    let dist = root.join("dist");
    recreate_dir(&dist)?;
    let assets = dist.join("assets");
    fs::create_dir_all(&assets)?;

    let wasm = fs::read(&optimized)?;
    let wasm_name = hashed_name("wasm", &wasm);
    write(&assets.join(&wasm_name), &wasm)?;

    // The lazy modules, optimized like the main one and named by content; the loader learns the names.
    let loader_path = split_dir.join(LINK_MODULE);
    let mut loader = fs::read_to_string(&loader_path)
        .with_context(|| format!("reading {}", display_path(&loader_path)))?;
    let mut lazy = Vec::new();
    for (stem, opt) in &lazy_modules {
        let bytes = fs::read(opt)?;
        let label = lazy_label(stem);
        let name = format!("{OUT_NAME}-{label}-{}.wasm", content_hash(&bytes));
        let fetched = format!("\"./{stem}.wasm\"");
        ensure!(
            loader.contains(&fetched),
            "the wasm-split loader does not fetch {fetched}; \
             the dist pipeline must learn how it names its modules now"
        );
        loader = loader.replace(&fetched, &format!("\"./{name}\""));
        write(&assets.join(&name), &bytes)?;
        lazy.push((label, assets.join(name)));
    }

    let glue_path = staging.join(format!("{OUT_NAME}.js"));
    let mut glue = fs::read_to_string(&glue_path)
        .with_context(|| format!("reading {}", display_path(&glue_path)))?;
    let snippets = copy_snippets(&staging.join("snippets"), &assets)?;
    if let Some(dir) = &snippets {
        glue = glue.replace("./snippets/", &format!("./{dir}/"));
    }
    let glue = finish_glue(&glue, &wasm_name)?;
    let modules = name_modules(&glue, &loader)?;
    let js_name = modules.glue_name.clone();
    write(&assets.join(&js_name), modules.glue.as_bytes())?;
    let loader_name = modules
        .loader
        .map(|(name, loader)| (name, loader.into_bytes()));
    if let Some((name, bytes)) = &loader_name {
        write(&assets.join(name), bytes)?;
    }

    let css = concat_css(&root.join("style"))?;
    let css_name = hashed_name("css", css.as_bytes());
    write(&assets.join(&css_name), css.as_bytes())?;

    let template_path =
        index_template.map_or_else(|| root.join("app/index.html"), Path::to_path_buf);
    let template = fs::read_to_string(&template_path).with_context(|| {
        format!(
            "reading {}: the page template with {{{{css}}}}, {{{{js}}}} and {{{{wasm}}}} placeholders",
            display_path(&template_path)
        )
    })?;
    let index = render_index(&template, &css_name, &js_name, &wasm_name)?;
    write(&dist.join("index.html"), index.as_bytes())?;

    copy_public(&root.join("public"), &dist)?;

    // Listed before precompressing, which adds `.br`/`.gz` siblings to these directories.
    let mut js_files = vec![assets.join(&js_name)];
    if let Some((name, _)) = &loader_name {
        js_files.push(assets.join(name));
    }
    if let Some(dir) = &snippets {
        collect_files(&assets.join(dir), &mut js_files)?;
    }
    let mut compressed = vec![dist.join("index.html")];
    collect_files(&assets, &mut compressed)?;
    for file in &compressed {
        precompress(file)?;
    }

    let first_load = [
        SizeRow::measure("wasm".into(), &[assets.join(&wasm_name)])?,
        SizeRow::measure(
            if snippets.is_some() {
                "js+snippets".into()
            } else {
                "js".into()
            },
            &js_files,
        )?,
        SizeRow::measure("css".into(), &[assets.join(&css_name)])?,
    ];
    let lazy = lazy
        .into_iter()
        .map(|(label, file)| SizeRow::measure(label, &[file]))
        .collect::<Result<Vec<_>>>()?;
    print_sizes(&first_load, &lazy);
    println!("dist: wrote {}", display_path(&dist));
    Ok(())
}

/// [`optimize`] over every `(input, output)` pair, as many at once as the machine has cores; the first
/// failure is returned once the running ones have finished.
fn optimize_all(wasm_opt: &Path, jobs: &[(PathBuf, PathBuf)]) -> Result<()> {
    let next = std::sync::atomic::AtomicUsize::new(0);
    let workers = std::thread::available_parallelism()
        .map_or(1, std::num::NonZeroUsize::get)
        .min(jobs.len().max(1));
    std::thread::scope(|scope| {
        let handles: Vec<_> = (0..workers)
            .map(|_| {
                scope.spawn(|| -> Result<()> {
                    loop {
                        let i = next.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                        let Some((input, output)) = jobs.get(i) else {
                            return Ok(());
                        };
                        optimize_or_strip(wasm_opt, input, output)?;
                    }
                })
            })
            .collect();
        handles.into_iter().try_for_each(|handle| {
            handle
                .join()
                .map_err(|_| anyhow::anyhow!("a wasm-opt worker panicked"))?
        })
    })
}

/// Below this size a lazy module is only stripped of its custom sections (names, producers), not run through
/// wasm-opt: most modules wasm-split writes are a few hundred bytes to a few kilobytes, where wasm-opt (binaryen
/// compiled to wasm, started on node for each file) spends seconds starting up to save almost nothing.
const SMALL_MODULE: u64 = 16 * 1024;

/// `wasm-opt` from `input` to `output`, with the passes that give the fewest bytes after brotli; a module
/// smaller than [`SMALL_MODULE`] only loses its custom sections.
fn optimize_or_strip(wasm_opt: &Path, input: &Path, output: &Path) -> Result<()> {
    let size = fs::metadata(input)
        .with_context(|| format!("reading {}", display_path(input)))?
        .len();
    if size >= SMALL_MODULE {
        return optimize(wasm_opt, input, output);
    }
    let bytes = fs::read(input).with_context(|| format!("reading {}", display_path(input)))?;
    let stripped = strip_custom_sections(&bytes)
        .with_context(|| format!("{} is not a wasm module", display_path(input)))?;
    fs::write(output, stripped).with_context(|| format!("writing {}", display_path(output)))
}

/// `module` without its custom sections (id 0: `name`, `producers`, …), every other section copied as it is.
fn strip_custom_sections(module: &[u8]) -> Option<Vec<u8>> {
    const HEADER: usize = 8;
    if module.get(..4)? != b"\0asm" {
        return None;
    }
    let mut out = module.get(..HEADER)?.to_vec();
    let mut at = HEADER;
    while at < module.len() {
        let id = *module.get(at)?;
        let (size, read) = leb128_u32(module.get(at + 1..)?)?;
        let end = at + 1 + read + usize::try_from(size).ok()?;
        let section = module.get(at..end)?;
        if id != 0 {
            out.extend_from_slice(section);
        }
        at = end;
    }
    Some(out)
}

/// An unsigned LEB128 number at the start of `bytes` and how many bytes it took.
fn leb128_u32(bytes: &[u8]) -> Option<(u32, usize)> {
    let mut value: u32 = 0;
    for (i, byte) in bytes.iter().take(5).enumerate() {
        value |= u32::from(byte & 0x7f) << (7 * i);
        if byte & 0x80 == 0 {
            return Some((value, i + 1));
        }
    }
    None
}

/// `wasm-opt` from `input` to `output`, with the passes that give the fewest bytes after brotli.
/// `-Oz` writes a smaller file but one that compresses worse: measured on the main module,
/// `-Os --converge` is 2 KB smaller after brotli than `-Oz`, `-Oz --converge`, `-O2`..`-O4` or `--gufa -Oz`.
fn optimize(wasm_opt: &Path, input: &Path, output: &Path) -> Result<()> {
    let mut opt = util::command(wasm_opt);
    opt.arg(input)
        .arg("-o")
        .arg(output)
        .args(["-Os", "--converge"])
        .args(WASM_OPT_FEATURES);
    util::run(&mut opt)
}

/// A short name for a split module in asset names and the size table: `split___create_route_view_123`
/// (one `#[lazy]` function, hash of its source location) becomes `create_route_view`; `chunk_5` (code
/// several of them share) becomes `chunk5`.
fn lazy_label(stem: &str) -> String {
    if let Some(split) = stem.strip_prefix("split_") {
        let name = split.trim_start_matches('_');
        let name = match name.rsplit_once('_') {
            Some((name, hash)) if hash.chars().all(|c| c.is_ascii_digit()) => name,
            _ => name,
        };
        name.replace('_', "-")
    } else {
        stem.replace('_', "")
    }
}

/// The JS glue and, when the wasm imports it, the split loader, with their final names.
struct Modules {
    glue_name: String,
    glue: String,
    /// File name and text of the loader that fetches the lazy modules.
    loader: Option<(String, String)>,
}

/// Names the glue and the split loader by one hash over both: each imports the other by name, so
/// neither can be named after only its own final bytes. Any change to either renames both.
fn name_modules(glue: &str, loader: &str) -> Result<Modules> {
    let imports_loader = format!("from \"{LINK_MODULE}\"");
    if !glue.contains(&imports_loader) {
        // No `#[lazy]` function survived linking: nothing to load later.
        let glue_name = hashed_name("js", glue.as_bytes());
        return Ok(Modules {
            glue_name,
            glue: glue.to_owned(),
            loader: None,
        });
    }
    let imports_glue = format!("from \"{GLUE_MODULE}\"");
    ensure!(
        loader.contains(&imports_glue),
        "the wasm-split loader does not import `initSync` {imports_glue}; \
         the dist pipeline must learn how it finds the glue now"
    );
    let hash = content_hash(format!("{glue}\0{loader}").as_bytes());
    let glue_name = format!("{OUT_NAME}-{hash}.js");
    let loader_name = format!("{OUT_NAME}-split-{hash}.js");
    Ok(Modules {
        glue: glue.replace(&imports_loader, &format!("from \"./{loader_name}\"")),
        loader: Some((
            loader_name,
            loader.replace(&imports_glue, &format!("from \"./{glue_name}\"")),
        )),
        glue_name,
    })
}

/// Splits the module rustc linked at leptos' `#[lazy]` points: the main module (still to go through
/// wasm-bindgen) to `main`, one module per lazy function plus shared chunks to `dir`, and the JS
/// that fetches them to `dir/LINK_MODULE`.
fn split_wasm(linked: &Path, dir: &Path, main: &Path) -> Result<wasm_split_cli_support::SplitWasm> {
    println!("$ wasm-split (library) {}", display_path(linked));
    let input = fs::read(linked).with_context(|| format!("reading {}", display_path(linked)))?;
    let mut options = wasm_split_cli_support::Options::new(&input);
    options.output_dir = dir;
    options.main_out_path = main;
    options.link_name = LINK_MODULE;
    options.main_module = GLUE_MODULE;
    wasm_split_cli_support::transform(options)
        .map_err(|err| anyhow::anyhow!("{err:?}"))
        .with_context(|| format!("splitting {}", display_path(linked)))
}

/// Returns the locked wasm-bindgen version after checking that the wasm-bindgen library the app
/// links and the bindgen library xtask links agree. They share an unversioned schema; a mismatch
/// fails at bindgen time with a cryptic "schema version" error, or worse, not at all.
pub fn check_bindgen_versions(lock: &str) -> Result<String> {
    let runtime = locked_versions(lock, "wasm-bindgen");
    let cli = locked_versions(lock, "wasm-bindgen-cli-support");
    let [runtime] = runtime.as_slice() else {
        bail!("Cargo.lock should hold exactly one wasm-bindgen version, found {runtime:?}");
    };
    let [cli] = cli.as_slice() else {
        bail!("Cargo.lock should hold exactly one wasm-bindgen-cli-support version, found {cli:?}");
    };
    ensure!(
        runtime == cli,
        "Cargo.lock has wasm-bindgen {runtime} but wasm-bindgen-cli-support {cli}; \
         pin both to the same `=` version in the workspace Cargo.toml"
    );
    Ok(runtime.clone())
}

/// Every version of `name` in a Cargo.lock (`[[package]]` blocks, `name` before `version`).
fn locked_versions(lock: &str, name: &str) -> Vec<String> {
    let wanted = format!("name = \"{name}\"");
    let mut versions = Vec::new();
    let mut in_package = false;
    for line in lock.lines().map(str::trim) {
        if line.starts_with('[') {
            in_package = false;
        } else if line == wanted {
            in_package = true;
        } else if in_package && let Some(rest) = line.strip_prefix("version = \"") {
            versions.push(rest.trim_end_matches('"').to_owned());
            in_package = false;
        }
    }
    versions
}

/// Installs the wasm target through rustup when missing (fresh machines and CI images).
fn ensure_wasm_target() -> Result<()> {
    let installed = util::read(util::command("rustup").args(["target", "list", "--installed"]))
        .context("listing rustup targets (the wasm build needs rustup)")?;
    if installed.lines().any(|l| l.trim() == WASM_TARGET) {
        return Ok(());
    }
    util::run(util::command("rustup").args(["target", "add", WASM_TARGET]))
}

/// Refuses a wasm-opt that is missing or too old to understand rustc's default features.
fn check_wasm_opt(path: &Path) -> Result<()> {
    ensure!(
        path.is_file(),
        "{} is missing; run `npm ci` in end2end/ (a wasm-opt on PATH is not used: \
         Debian's is too old and produces broken modules)",
        path.display()
    );
    let out = util::read(util::command(path).arg("--version"))?;
    let version = wasm_opt_version(&out)
        .with_context(|| format!("{} printed an unexpected version: {out:?}", path.display()))?;
    ensure!(
        version >= MIN_WASM_OPT_VERSION,
        "{} is binaryen version {version}; need at least {MIN_WASM_OPT_VERSION} \
         (update `binaryen` in end2end/package.json and run `npm ci`)",
        path.display()
    );
    Ok(())
}

/// Parses `wasm-opt version 132 (version_132)` into 132.
fn wasm_opt_version(output: &str) -> Option<u32> {
    let rest = output.trim().strip_prefix("wasm-opt version ")?;
    let digits: String = rest.chars().take_while(char::is_ascii_digit).collect();
    digits.parse().ok()
}

/// Where cargo puts build output, honouring `CARGO_TARGET_DIR` like cargo does.
fn target_dir() -> PathBuf {
    match std::env::var_os("CARGO_TARGET_DIR") {
        Some(dir) => repo_root().join(dir),
        None => repo_root().join("target"),
    }
}

/// Empties `dir` so files from an earlier build (old hashes) don't linger.
fn recreate_dir(dir: &Path) -> Result<()> {
    if dir.exists() {
        fs::remove_dir_all(dir).with_context(|| format!("removing {}", display_path(dir)))?;
    }
    fs::create_dir_all(dir).with_context(|| format!("creating {}", display_path(dir)))
}

fn write(path: &Path, bytes: &[u8]) -> Result<()> {
    fs::write(path, bytes).with_context(|| format!("writing {}", display_path(path)))
}

/// The first 16 hex digits of the content's SHA-256.
fn content_hash(bytes: &[u8]) -> String {
    Sha256::digest(bytes)[..8]
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

/// `tower-<hash16>.<ext>`: the name changes whenever the bytes do, so assets can be cached forever.
fn hashed_name(ext: &str, bytes: &[u8]) -> String {
    format!("{OUT_NAME}-{}.{ext}", content_hash(bytes))
}

/// Points the glue at the hashed wasm and makes it start the app on load, so `index.html` needs
/// only a `<script type="module" src>`.
fn finish_glue(glue: &str, wasm_name: &str) -> Result<String> {
    let default_wasm = format!("'{OUT_NAME}_bg.wasm'");
    ensure!(
        glue.contains(&default_wasm),
        "the wasm-bindgen glue no longer contains {default_wasm}; \
         the dist pipeline must learn the new way the glue finds its wasm"
    );
    ensure!(
        glue.contains("__wbg_init as default") || glue.contains("export default __wbg_init"),
        "the wasm-bindgen glue no longer exports `__wbg_init` as its default; \
         the dist pipeline must learn the new name of the init function"
    );
    let mut glue = glue.replace(&default_wasm, &format!("'{wasm_name}'"));
    if !glue.ends_with('\n') {
        glue.push('\n');
    }
    glue.push_str("\n__wbg_init();\n");
    Ok(glue)
}

/// Copies wasm-bindgen's `snippets/` (inline JS and local modules) to `assets/snippets-<hash>/`
/// and returns that directory name, so snippets are cache-busted like every other asset.
fn copy_snippets(src: &Path, assets: &Path) -> Result<Option<String>> {
    if !src.is_dir() {
        return Ok(None);
    }
    let mut files = Vec::new();
    collect_files(src, &mut files)?;
    files.sort();
    let mut hasher = Sha256::new();
    for file in &files {
        hasher.update(file.strip_prefix(src)?.to_string_lossy().as_bytes());
        hasher.update(fs::read(file)?);
    }
    let dir = format!("snippets-{}", &content_hash(&hasher.finalize()));
    for file in &files {
        let dest = assets.join(&dir).join(file.strip_prefix(src)?);
        if let Some(parent) = dest.parent() {
            fs::create_dir_all(parent)?;
        }
        fs::copy(file, &dest).with_context(|| format!("copying {}", display_path(file)))?;
    }
    Ok(Some(dir))
}

/// `style/*.css` in name order, one stylesheet so the first paint waits on one request.
fn concat_css(dir: &Path) -> Result<String> {
    let mut files: Vec<PathBuf> = match fs::read_dir(dir) {
        Ok(entries) => entries
            .map(|e| e.map(|e| e.path()))
            .collect::<Result<_, _>>()?,
        Err(err) if err.kind() == std::io::ErrorKind::NotFound => Vec::new(),
        Err(err) => return Err(err).context("reading style/"),
    };
    files.retain(|p| p.extension().is_some_and(|e| e == "css") && p.is_file());
    files.sort();
    if files.is_empty() {
        println!("warning: style/ has no .css files; the stylesheet is empty");
    }
    let mut css = String::new();
    for file in files {
        let text = fs::read_to_string(&file)
            .with_context(|| format!("reading {}", display_path(&file)))?;
        css.push_str(&text);
        if !css.ends_with('\n') {
            css.push('\n');
        }
    }
    Ok(css)
}

/// Fills `{{css}}`, `{{js}}` and `{{wasm}}` with `/assets/<file>` paths. Without `{{js}}` the app
/// would never start; any `{{` left over is a typo that would otherwise ship.
fn render_index(template: &str, css: &str, js: &str, wasm: &str) -> Result<String> {
    ensure!(
        template.contains("{{js}}"),
        "app/index.html has no {{{{js}}}} placeholder, so the app would never load"
    );
    for name in ["css", "wasm"] {
        if !template.contains(&format!("{{{{{name}}}}}")) {
            println!("warning: app/index.html has no {{{{{name}}}}} placeholder");
        }
    }
    let html = template
        .replace("{{css}}", &format!("/assets/{css}"))
        .replace("{{js}}", &format!("/assets/{js}"))
        .replace("{{wasm}}", &format!("/assets/{wasm}"));
    if let Some(at) = html.find("{{") {
        let unknown: String = html[at..].chars().take(24).collect();
        bail!("app/index.html has an unknown placeholder near {unknown:?}");
    }
    Ok(html)
}

/// Copies `public/**` to the root of `dist/`; refuses to overwrite a generated file.
fn copy_public(public: &Path, dist: &Path) -> Result<()> {
    if !public.is_dir() {
        return Ok(());
    }
    let mut files = Vec::new();
    collect_files(public, &mut files)?;
    for file in files {
        let dest = dist.join(file.strip_prefix(public)?);
        ensure!(
            !dest.exists(),
            "{} would overwrite the generated {}",
            display_path(&file),
            display_path(&dest)
        );
        if let Some(parent) = dest.parent() {
            fs::create_dir_all(parent)?;
        }
        fs::copy(&file, &dest).with_context(|| format!("copying {}", display_path(&file)))?;
    }
    Ok(())
}

/// Appends every regular file under `dir`, recursively.
fn collect_files(dir: &Path, out: &mut Vec<PathBuf>) -> Result<()> {
    for entry in fs::read_dir(dir).with_context(|| format!("reading {}", display_path(dir)))? {
        let path = entry?.path();
        if path.is_dir() {
            collect_files(&path, out)?;
        } else {
            out.push(path);
        }
    }
    Ok(())
}

/// Writes `<file>.br` (quality 11) and `<file>.gz` (best): build time is cheap, bytes on the
/// wire are not, and the server can then send them without compressing per request.
fn precompress(file: &Path) -> Result<()> {
    let bytes = fs::read(file)?;
    let br = brotli(&bytes)?;
    write(&with_suffix(file, "br"), &br)?;
    let gz = gzip(&bytes)?;
    write(&with_suffix(file, "gz"), &gz)
}

fn brotli(bytes: &[u8]) -> Result<Vec<u8>> {
    let params = brotli::enc::BrotliEncoderParams {
        quality: 11,
        // The format's largest window; every browser decoder accepts it.
        lgwin: 24,
        ..Default::default()
    };
    let mut out = Vec::new();
    brotli::BrotliCompress(&mut &bytes[..], &mut out, &params)?;
    Ok(out)
}

fn gzip(bytes: &[u8]) -> Result<Vec<u8>> {
    let mut encoder = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::best());
    encoder.write_all(bytes)?;
    Ok(encoder.finish()?)
}

/// `file.ext` → `file.ext.<suffix>`.
fn with_suffix(file: &Path, suffix: &str) -> PathBuf {
    let mut name = file.as_os_str().to_owned();
    name.push(".");
    name.push(suffix);
    PathBuf::from(name)
}

/// One line of the size table.
struct SizeRow {
    label: String,
    raw: u64,
    gzip: u64,
    brotli: u64,
}

impl SizeRow {
    /// Sums the sizes of `files` and their precompressed siblings.
    fn measure(label: String, files: &[PathBuf]) -> Result<Self> {
        let size = |p: &Path| -> Result<u64> {
            Ok(fs::metadata(p)
                .with_context(|| format!("measuring {}", display_path(p)))?
                .len())
        };
        let mut row = SizeRow {
            label,
            raw: 0,
            gzip: 0,
            brotli: 0,
        };
        for file in files {
            row.raw += size(file)?;
            row.gzip += size(&with_suffix(file, "gz"))?;
            row.brotli += size(&with_suffix(file, "br"))?;
        }
        Ok(row)
    }
}

/// The first load (`rows`, totalled and held to the budget), then the modules fetched later.
fn print_sizes(rows: &[SizeRow], lazy: &[SizeRow]) {
    let total = SizeRow {
        label: "total".into(),
        raw: rows.iter().map(|r| r.raw).sum(),
        gzip: rows.iter().map(|r| r.gzip).sum(),
        brotli: rows.iter().map(|r| r.brotli).sum(),
    };
    let cell = |n: u64| format!("{n} ({})", human(n));
    let line = |row: &SizeRow| {
        println!(
            "{:<24} {:>22} {:>22} {:>22}",
            row.label,
            cell(row.raw),
            cell(row.gzip),
            cell(row.brotli)
        );
    };
    println!();
    println!("{:<24} {:>22} {:>22} {:>22}", "", "raw", "gzip", "brotli");
    rows.iter().chain([&total]).for_each(line);
    if !lazy.is_empty() {
        println!("fetched when first needed:");
        lazy.iter().for_each(line);
    }
    println!();
    if total.brotli <= FIRST_LOAD_BUDGET {
        println!(
            "first load: {} brotli, within the {} budget",
            human(total.brotli),
            human(FIRST_LOAD_BUDGET)
        );
    } else {
        println!(
            "warning: first load is {} brotli, over the {} budget by {}",
            human(total.brotli),
            human(FIRST_LOAD_BUDGET),
            human(total.brotli - FIRST_LOAD_BUDGET)
        );
    }
}

/// Bytes in decimal units (B, KB, MB), matching how the budget is stated.
fn human(bytes: u64) -> String {
    // Precision loss only matters beyond 2^53 bytes.
    #[allow(clippy::cast_precision_loss)]
    let b = bytes as f64;
    if bytes < 1_000 {
        format!("{bytes} B")
    } else if bytes < 1_000_000 {
        format!("{:.1} KB", b / 1e3)
    } else {
        format!("{:.2} MB", b / 1e6)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn custom_sections_are_stripped_and_the_rest_kept() {
        // magic, version; a type section (id 1, 4 bytes); a custom "name" section (id 0, 5 bytes); a
        // function section (id 3, 2 bytes).
        let module = [
            b"\0asm".as_slice(),
            &[1, 0, 0, 0],
            &[1, 4, 1, 0x60, 0, 0],
            &[0, 5, 4, b'n', b'a', b'm', b'e'],
            &[3, 2, 1, 0],
        ]
        .concat();
        let stripped = strip_custom_sections(&module).expect("a module");
        assert_eq!(
            stripped,
            [
                b"\0asm".as_slice(),
                &[1, 0, 0, 0],
                &[1, 4, 1, 0x60, 0, 0],
                &[3, 2, 1, 0]
            ]
            .concat()
        );
        assert_eq!(strip_custom_sections(b"not wasm"), None);
        // A section claiming more bytes than there are.
        assert_eq!(
            strip_custom_sections(&[b"\0asm".as_slice(), &[1, 0, 0, 0], &[1, 9, 0]].concat()),
            None
        );
        assert_eq!(leb128_u32(&[0xe5, 0x8e, 0x26]), Some((624_485, 3)));
    }

    #[test]
    fn the_real_lockfile_pins_wasm_bindgen_and_its_cli_support_to_one_version() {
        let lock = fs::read_to_string(repo_root().join("Cargo.lock")).expect("Cargo.lock");
        let version = check_bindgen_versions(&lock).expect("matching versions");
        assert!(version.starts_with("0.2."), "{version}");
    }

    #[test]
    fn mismatched_bindgen_versions_are_refused_naming_both() {
        let lock = r#"
[[package]]
name = "wasm-bindgen"
version = "0.2.100"
source = "registry+https://github.com/rust-lang/crates.io-index"

[[package]]
name = "wasm-bindgen-cli-support"
version = "0.2.101"
"#;
        let err = check_bindgen_versions(lock)
            .expect_err("mismatch")
            .to_string();
        assert!(err.contains("0.2.100") && err.contains("0.2.101"), "{err}");
    }

    #[test]
    fn a_lockfile_without_the_cli_support_is_refused() {
        let lock = "[[package]]\nname = \"wasm-bindgen\"\nversion = \"0.2.100\"\n";
        assert!(check_bindgen_versions(lock).is_err());
    }

    #[test]
    fn wasm_opt_version_is_read_from_its_banner() {
        assert_eq!(
            wasm_opt_version("wasm-opt version 132 (version_132)\n"),
            Some(132)
        );
        assert_eq!(wasm_opt_version("wasm-opt version 108\n"), Some(108));
        assert_eq!(wasm_opt_version("something else"), None);
    }

    #[test]
    fn glue_loads_the_hashed_wasm_and_starts_the_app() {
        let glue = "module_or_path = new URL('tower_bg.wasm', import.meta.url);\n\
                    export { initSync, __wbg_init as default };\n";
        let out = finish_glue(glue, "tower-0123456789abcdef.wasm").expect("glue");
        assert!(out.contains("new URL('tower-0123456789abcdef.wasm', import.meta.url)"));
        assert!(!out.contains("tower_bg.wasm"));
        assert!(out.ends_with("\n__wbg_init();\n"));
    }

    #[test]
    fn glue_without_the_expected_init_export_is_refused() {
        let glue = "new URL('tower_bg.wasm', import.meta.url);\nexport { init as default };\n";
        assert!(finish_glue(glue, "x.wasm").is_err());
    }

    #[test]
    fn index_placeholders_become_asset_paths() {
        let html = render_index(
            r#"<link href="{{css}}"><link rel="preload" href="{{wasm}}"><script src="{{js}}">"#,
            "a.css",
            "b.js",
            "c.wasm",
        )
        .expect("rendered");
        assert_eq!(
            html,
            r#"<link href="/assets/a.css"><link rel="preload" href="/assets/c.wasm"><script src="/assets/b.js">"#
        );
    }

    #[test]
    fn index_with_an_unknown_placeholder_is_refused() {
        assert!(render_index("{{js}} {{jss}}", "a", "b", "c").is_err());
    }

    #[test]
    fn split_modules_are_labelled_by_their_lazy_function() {
        assert_eq!(
            lazy_label("split___create_route_view_8572326166015008768"),
            "create-route-view"
        );
        assert_eq!(lazy_label("split_log_panel_12"), "log-panel");
        assert_eq!(lazy_label("chunk_5"), "chunk5");
    }

    #[test]
    fn glue_and_split_loader_import_each_other_by_their_hashed_names() {
        let glue = "import * as import1 from \"./__wasm_split.js\"\n\
                    imports[\"./__wasm_split.js\"] = import1;\n";
        let loader = "import { initSync } from \"./tower.js\";\n";
        let modules = name_modules(glue, loader).expect("named");
        let (loader_name, loader_text) = modules.loader.expect("a loader");
        assert!(modules.glue_name.starts_with("tower-") && modules.glue_name.ends_with(".js"));
        assert!(modules.glue.contains(&format!("from \"./{loader_name}\"")));
        // The wasm imports the loader under its unhashed name; only the JS import changes.
        assert!(modules.glue.contains("imports[\"./__wasm_split.js\"]"));
        assert!(loader_text.contains(&format!("from \"./{}\"", modules.glue_name)));

        let changed =
            name_modules(glue, "import { initSync } from \"./tower.js\";\n// v2\n").expect("named");
        assert_ne!(changed.glue_name, modules.glue_name);
    }

    #[test]
    fn glue_that_loads_nothing_lazily_ships_without_a_loader() {
        let modules = name_modules("export default 1;\n", "").expect("named");
        assert!(modules.loader.is_none());
        assert_eq!(modules.glue_name, hashed_name("js", b"export default 1;\n"));
    }

    #[test]
    fn hashed_names_have_sixteen_hex_digits() {
        let name = hashed_name("wasm", b"hello");
        assert_eq!(name, "tower-2cf24dba5fb0a30e.wasm");
    }
}
