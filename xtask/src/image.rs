//! `cargo xtask image`: Tower as one container image, built offline. Builds `dist/`, then a static musl
//! `tower` with the SPA embedded (feature `embed-spa`) in the `image` profile, then an OCI image FROM scratch
//! with buildah, written to `target/image/tower.oci.tar`. `--smoke` (and `cargo xtask test`) then takes the
//! binary back out of the archive and runs it: `--version`, and `serve --sandbox` from a folder without
//! `dist/` until `/healthz` and the embedded SPA answer, stopped with SIGTERM.
//!
//! The image carries the default features, the sandbox included, so the smoke test can run
//! `serve --sandbox` on exactly the binary the image holds; a production image without the emulator is the
//! same build with `--no-default-features`.

use std::fs;
use std::io::{Read as _, Write as _};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail, ensure};
use serde_json::Value;

use crate::dist;
use crate::leftovers;
use crate::util::{self, display_path, repo_root};

/// The image's target: a static binary runs FROM scratch.
const TARGET: &str = "x86_64-unknown-linux-musl";
/// The C compiler `ring` and `mimalloc` need for musl (Debian's `musl-tools`).
const MUSL_GCC: &str = "musl-gcc";
/// The cargo profile (see the workspace `Cargo.toml`): release, with build time kept in check.
const PROFILE: &str = "image";
/// The same build unoptimised: what the test command builds and smoke-tests, since a second, optimised
/// build of every dependency for musl would take CI's two cores longer than the rest of the run allows.
const QUICK_PROFILE: &str = "image-quick";
/// The image's name in buildah's (private, throw-away) storage.
const NAME: &str = "localhost/tower:latest";
/// The user the container runs as: no name, no home, not root.
const USER: &str = "65532:65532";
/// How long `serve --sandbox` gets to answer `/healthz`.
const START_TIMEOUT: Duration = Duration::from_secs(90);
/// How long it gets to exit after SIGTERM.
const STOP_TIMEOUT: Duration = Duration::from_secs(20);

/// Options of `cargo xtask image`.
#[derive(Debug, Clone, clap::Args)]
pub struct ImageArgs {
    /// Then run the smoke test on the archive's binary.
    #[arg(long)]
    pub smoke: bool,
    /// Use the `dist/` already built instead of building it again.
    #[arg(long)]
    pub skip_dist: bool,
    /// Build the binary unoptimised (minutes less, a larger and slower binary): the same target, features,
    /// image and archive, as the test command builds them.
    #[arg(long)]
    pub quick: bool,
}

/// `cargo xtask image [--smoke] [--skip-dist]`.
pub fn image(args: &ImageArgs) -> Result<()> {
    if !args.skip_dist {
        dist::dist(None)?;
    }
    let archive = build(if args.quick { QUICK_PROFILE } else { PROFILE })?;
    if args.smoke {
        smoke(&archive)?;
    }
    Ok(())
}

/// `target/image/`, where the binary is staged and the archive written.
fn image_dir() -> PathBuf {
    repo_root().join("target/image")
}

/// The OCI archive `cargo xtask image` writes.
pub fn archive_path() -> PathBuf {
    image_dir().join("tower.oci.tar")
}

/// Builds the static binary in cargo profile `profile` from the current `dist/` and the image around it;
/// returns the archive's path.
pub fn build(profile: &str) -> Result<PathBuf> {
    let index = repo_root().join("dist/index.html");
    ensure!(
        index.exists(),
        "{} is missing: run `cargo xtask dist` first, the image embeds it",
        display_path(&index)
    );
    if let Some(missing) = missing_tools().first() {
        bail!("{missing}");
    }
    let binary = build_binary(profile)?;
    let archive = build_archive(&binary)?;
    println!(
        "image: {} ({}), binary {} ({})",
        display_path(&archive),
        human(file_size(&archive)?),
        display_path(&binary),
        human(file_size(&binary)?)
    );
    Ok(archive)
}

/// `cargo build` of a static `tower` with the SPA embedded, for [`TARGET`] in `profile`.
fn build_binary(profile: &str) -> Result<PathBuf> {
    ensure_musl_target()?;
    let started = Instant::now();
    let mut cargo = util::cargo([
        "build",
        "-p",
        "server",
        "--bin",
        "tower",
        "--features",
        "embed-spa",
        "--profile",
        profile,
        "--target",
        TARGET,
    ]);
    // The cc crate reads CC_<target>: ring's and mimalloc's C, compiled against musl.
    cargo.env("CC_x86_64_unknown_linux_musl", MUSL_GCC);
    util::run(&mut cargo)?;
    println!(
        "tower for {TARGET} ({profile} profile) built in {:.0}s",
        started.elapsed().as_secs_f64()
    );
    Ok(repo_root().join(format!("target/{TARGET}/{profile}/tower")))
}

/// The image FROM scratch: `/tower` (the entrypoint, `serve` by default), an empty `/tmp` for the
/// sandbox's and Tower's temporary files, and the host's CA bundle for TLS to GitHub and the clusters.
fn build_archive(binary: &Path) -> Result<PathBuf> {
    let dir = image_dir();
    let rootfs = dir.join("rootfs");
    recreate(&rootfs)?;
    fs::copy(binary, rootfs.join("tower"))
        .with_context(|| format!("copying {} into the image", display_path(binary)))?;
    set_mode(&rootfs.join("tower"), 0o755)?;
    let tmp = rootfs.join("tmp");
    fs::create_dir(&tmp).with_context(|| format!("creating {}", tmp.display()))?;
    set_mode(&tmp, 0o1777)?;
    let bundle = Path::new("/etc/ssl/certs/ca-certificates.crt");
    if bundle.exists() {
        let certs = rootfs.join("etc/ssl/certs");
        fs::create_dir_all(&certs).with_context(|| format!("creating {}", certs.display()))?;
        fs::copy(bundle, certs.join("ca-certificates.crt"))
            .with_context(|| format!("copying {}", bundle.display()))?;
    } else {
        println!(
            "warning: {} is missing (Debian's ca-certificates): the image trusts no CA for outgoing TLS",
            bundle.display()
        );
    }

    let storage = Storage::new(&dir);
    storage.reset()?;
    let container = storage.read(&["from", "--isolation", "chroot", "scratch"])?;
    let container = container.trim().to_string();
    ensure!(
        !container.is_empty(),
        "`buildah from scratch` named no container"
    );
    let rootfs_arg = format!("{}/", rootfs.display());
    storage.run(&["copy", "--chown", "0:0", &container, &rootfs_arg, "/"])?;
    let version = env!("CARGO_PKG_VERSION");
    let revision = util::read(util::command("git").args(["rev-parse", "HEAD"]))
        .map(|sha| sha.trim().to_string())
        .unwrap_or_default();
    let labels = [
        ("title", "tower".to_string()),
        (
            "description",
            "Tower: the platform's developer portal (SPA and backend-for-frontend in one binary)"
                .into(),
        ),
        ("version", version.to_string()),
        ("revision", revision),
        ("licenses", "Apache-2.0".into()),
    ];
    let mut config = vec![
        "config".to_string(),
        "--user".into(),
        USER.into(),
        "--entrypoint".into(),
        r#"["/tower"]"#.into(),
        "--cmd".into(),
        "serve".into(),
    ];
    for (key, value) in labels.into_iter().filter(|(_, value)| !value.is_empty()) {
        config.push("--label".into());
        config.push(format!("org.opencontainers.image.{key}={value}"));
    }
    config.push(container.clone());
    storage.run(&config.iter().map(String::as_str).collect::<Vec<_>>())?;
    storage.run(&["commit", "--rm", &container, NAME])?;
    let archive = archive_path();
    remove_file(&archive)?;
    storage.run(&[
        "push",
        NAME,
        &format!("oci-archive:{}:{NAME}", archive.display()),
    ])?;
    storage.reset()?;
    fs::remove_dir_all(&rootfs).with_context(|| format!("removing {}", rootfs.display()))?;
    Ok(archive)
}

/// buildah with its own storage under `target/image/`, so the build leaves nothing in the machine's
/// container storage and needs no configuration: vfs (no overlay or fuse needed) and chroot isolation (no
/// user namespaces needed; nothing runs inside the image anyway).
struct Storage {
    root: PathBuf,
    runroot: PathBuf,
}

impl Storage {
    fn new(dir: &Path) -> Self {
        Self {
            root: dir.join("containers"),
            runroot: dir.join("containers-run"),
        }
    }

    fn command(&self, args: &[&str]) -> Command {
        let mut buildah = util::command("buildah");
        buildah
            .arg("--root")
            .arg(&self.root)
            .arg("--runroot")
            .arg(&self.runroot)
            .args(["--storage-driver", "vfs"])
            .args(args)
            .env("BUILDAH_ISOLATION", "chroot");
        buildah
    }

    fn run(&self, args: &[&str]) -> Result<()> {
        util::run(&mut self.command(args))
    }

    fn read(&self, args: &[&str]) -> Result<String> {
        util::read(&mut self.command(args))
    }

    /// Removes what an earlier (perhaps interrupted) build left: containers, images, the folders.
    fn reset(&self) -> Result<()> {
        if self.root.exists() {
            // Through buildah, which can remove what it wrote even when the files are not ours to remove.
            self.run(&["rm", "--all"])?;
            self.run(&["rmi", "--all", "--force"])?;
        }
        for dir in [&self.root, &self.runroot] {
            match fs::remove_dir_all(dir) {
                Ok(()) => {}
                Err(err) if err.kind() == std::io::ErrorKind::NotFound => {}
                Err(err) => {
                    return Err(err).with_context(|| format!("removing {}", dir.display()));
                }
            }
        }
        Ok(())
    }
}

/// Takes `tower` out of the archive and runs it: `--version`, then `serve --sandbox` in a folder without
/// `dist/` until `/healthz` answers 200 and `/` serves the embedded `index.html` (and one of its hashed
/// assets, immutable), then SIGTERM, after which it must exit 0.
pub fn smoke(archive: &Path) -> Result<()> {
    let dir = image_dir().join("smoke");
    recreate(&dir)?;
    let (binary, config) = extract(archive, &dir)?;
    check_config(&config)?;

    let version = util::read(util::command(&binary).arg("--version"))?;
    ensure!(
        version.contains(env!("CARGO_PKG_VERSION")),
        "`tower --version` printed {version:?}, not version {}",
        env!("CARGO_PKG_VERSION")
    );
    println!("smoke: {}", version.trim());

    let listen = free_port()?;
    let [tmp, _] = leftovers::temp_dirs();
    fs::create_dir_all(&tmp).with_context(|| format!("creating {}", tmp.display()))?;
    let mut serve = util::command(&binary);
    serve
        .args(["serve", "--sandbox", "--sandbox-no-metrics", "--listen"])
        .arg(listen.to_string())
        // In a folder without dist/, and without TOWER_ASSETS: only the embedded SPA can answer.
        .current_dir(&dir)
        .env_remove("TOWER_ASSETS")
        .env("TMPDIR", &tmp)
        .env("TOWER_LOG", "warn")
        .stdout(Stdio::null());
    util::announce(&serve);
    let mut server = Server(Some(serve.spawn().context("starting the image's tower")?));

    let started = Instant::now();
    wait_healthy(&mut server, listen)?;
    println!(
        "smoke: /healthz answered after {:.1}s",
        started.elapsed().as_secs_f64()
    );
    let index = get(listen, "/services/payments", &[])?;
    ensure!(
        index.status == 200,
        "GET /services/payments answered {}",
        index.status
    );
    ensure!(
        index
            .header("content-type")
            .is_some_and(|t| t.starts_with("text/html"))
            && index.header("cache-control") == Some("no-cache"),
        "GET /services/payments is not a revalidated HTML page: {:?}",
        index.headers
    );
    let body = String::from_utf8_lossy(&index.body);
    let asset = first_asset(&body).with_context(|| {
        format!("the served index.html names no /assets/ file, so it is not the SPA: {body:.200}")
    })?;
    let asset = get(listen, &asset, &[("accept-encoding", "br, gzip")])?;
    ensure!(
        asset.status == 200
            && asset.header("cache-control") == Some("public, max-age=31536000, immutable")
            && asset.header("content-encoding") == Some("br"),
        "the index's first asset is not served immutable and precompressed: {} {:?}",
        asset.status,
        asset.headers
    );
    println!("smoke: / serves the embedded SPA");

    let status = server.stop()?;
    ensure!(status.success(), "tower exited with {status} after SIGTERM");
    println!("smoke: stopped by SIGTERM, {status}");
    fs::remove_dir_all(&dir).with_context(|| format!("removing {}", dir.display()))?;
    Ok(())
}

/// Unpacks the OCI archive into `dir` and writes the image's `/tower` to `dir/tower`; returns it with the
/// image's configuration.
fn extract(archive: &Path, dir: &Path) -> Result<(PathBuf, Value)> {
    let layout = dir.join("oci");
    let file =
        fs::File::open(archive).with_context(|| format!("opening {}", display_path(archive)))?;
    tar::Archive::new(file)
        .unpack(&layout)
        .with_context(|| format!("unpacking {}", display_path(archive)))?;
    let index = read_json(&layout.join("index.json"))?;
    let manifest = index["manifests"]
        .as_array()
        .and_then(|manifests| manifests.first())
        .context("index.json lists no manifest")?;
    let manifest = read_json(&blob(&layout, manifest)?)?;
    let config = read_json(&blob(&layout, &manifest["config"])?)?;
    let layers = manifest["layers"]
        .as_array()
        .context("the manifest lists no layers")?;
    let binary = dir.join("tower");
    for layer in layers {
        let path = blob(&layout, layer)?;
        let media_type = layer["mediaType"].as_str().unwrap_or_default();
        let file = fs::File::open(&path).with_context(|| format!("opening {}", path.display()))?;
        let found = if media_type.ends_with("+gzip") {
            copy_out(flate2::read::GzDecoder::new(file), &binary)
        } else if media_type.ends_with(".tar") {
            copy_out(file, &binary)
        } else {
            bail!("layer {path:?} has media type {media_type:?}, neither tar nor tar+gzip")
        }
        .with_context(|| format!("reading layer {}", path.display()))?;
        if found {
            set_mode(&binary, 0o755)?;
            return Ok((binary, config));
        }
    }
    bail!("no layer of {} holds /tower", display_path(archive))
}

/// Writes the layer's `tower` to `out`; whether the layer had it.
fn copy_out(layer: impl std::io::Read, out: &Path) -> Result<bool> {
    let mut layer = tar::Archive::new(layer);
    for entry in layer.entries()? {
        let mut entry = entry?;
        let path = entry.path()?.into_owned();
        // `tower`, `./tower` or `/tower`, as the layer's writer chose to spell it.
        let names = path
            .components()
            .filter(|part| matches!(part, std::path::Component::Normal(_)));
        if names.eq(Path::new("tower").components()) {
            entry
                .unpack(out)
                .with_context(|| format!("writing {}", out.display()))?;
            return Ok(true);
        }
    }
    Ok(false)
}

/// The file an OCI descriptor (`{"digest": "sha256:…"}`) points at.
fn blob(layout: &Path, descriptor: &Value) -> Result<PathBuf> {
    let digest = descriptor["digest"]
        .as_str()
        .with_context(|| format!("a descriptor without a digest: {descriptor}"))?;
    let (algorithm, hex) = digest
        .split_once(':')
        .with_context(|| format!("digest {digest:?}"))?;
    ensure!(
        !algorithm.contains(['/', '.']) && hex.chars().all(|c| c.is_ascii_hexdigit()),
        "digest {digest:?} is not a blob name"
    );
    Ok(layout.join("blobs").join(algorithm).join(hex))
}

fn read_json(path: &Path) -> Result<Value> {
    let text = fs::read_to_string(path).with_context(|| format!("reading {}", path.display()))?;
    serde_json::from_str(&text).with_context(|| format!("parsing {}", path.display()))
}

/// The image runs `/tower serve` as [`USER`].
fn check_config(config: &Value) -> Result<()> {
    let run = &config["config"];
    ensure!(
        run["User"] == USER,
        "the image runs as {}, not {USER}",
        run["User"]
    );
    ensure!(
        run["Entrypoint"] == serde_json::json!(["/tower"])
            && run["Cmd"] == serde_json::json!(["serve"]),
        "the image's entrypoint and command are {} {}, not /tower serve",
        run["Entrypoint"],
        run["Cmd"]
    );
    Ok(())
}

/// A `tower` child, SIGKILLed if the smoke test ends before [`Server::stop`].
struct Server(Option<Child>);

impl Server {
    /// SIGTERM, then its exit status once it has stopped.
    fn stop(mut self) -> Result<ExitStatus> {
        let mut child = self.0.take().context("tower was already stopped")?;
        let pid = i32::try_from(child.id())
            .ok()
            .and_then(rustix::process::Pid::from_raw)
            .context("tower's pid")?;
        rustix::process::kill_process(pid, rustix::process::Signal::TERM)
            .context("sending tower SIGTERM")?;
        let deadline = Instant::now() + STOP_TIMEOUT;
        loop {
            if let Some(status) = child.try_wait().context("waiting for tower")? {
                return Ok(status);
            }
            if Instant::now() > deadline {
                let _ = child.kill();
                let _ = child.wait();
                bail!("tower was still running {STOP_TIMEOUT:?} after SIGTERM");
            }
            std::thread::sleep(Duration::from_millis(100));
        }
    }

    /// Fails if the server has exited.
    fn check_running(&mut self) -> Result<()> {
        if let Some(child) = self.0.as_mut()
            && let Some(status) = child.try_wait().context("checking on tower")?
        {
            bail!("tower exited with {status} before answering /healthz");
        }
        Ok(())
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        if let Some(mut child) = self.0.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}

/// Polls `/healthz` until it answers 200.
fn wait_healthy(server: &mut Server, listen: SocketAddr) -> Result<()> {
    let deadline = Instant::now() + START_TIMEOUT;
    loop {
        server.check_running()?;
        if let Ok(answer) = get(listen, "/healthz", &[])
            && answer.status == 200
        {
            return Ok(());
        }
        if Instant::now() > deadline {
            bail!("tower did not answer /healthz within {START_TIMEOUT:?}");
        }
        std::thread::sleep(Duration::from_millis(250));
    }
}

/// A free port on the loopback interface (the kernel's pick, released for `tower` to bind).
fn free_port() -> Result<SocketAddr> {
    let listener = TcpListener::bind("127.0.0.1:0").context("finding a free port")?;
    listener.local_addr().context("finding a free port")
}

/// An HTTP/1.1 answer, as far as the smoke test reads it.
#[derive(Debug)]
struct Answer {
    status: u16,
    headers: Vec<(String, String)>,
    body: Vec<u8>,
}

impl Answer {
    fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(key, _)| key.eq_ignore_ascii_case(name))
            .map(|(_, value)| value.as_str())
    }
}

/// `GET path` over a fresh connection (`Connection: close`, so the body is everything after the headers).
fn get(listen: SocketAddr, path: &str, headers: &[(&str, &str)]) -> Result<Answer> {
    let mut stream = TcpStream::connect_timeout(&listen, Duration::from_secs(2))
        .with_context(|| format!("connecting to {listen}"))?;
    stream.set_read_timeout(Some(Duration::from_secs(10)))?;
    let mut request = format!("GET {path} HTTP/1.1\r\nHost: {listen}\r\nConnection: close\r\n");
    for (name, value) in headers {
        request.push_str(&format!("{name}: {value}\r\n"));
    }
    request.push_str("\r\n");
    stream.write_all(request.as_bytes())?;
    let mut raw = Vec::new();
    stream
        .read_to_end(&mut raw)
        .with_context(|| format!("reading the answer to GET {path}"))?;
    parse_answer(&raw).with_context(|| format!("the answer to GET {path}"))
}

fn parse_answer(raw: &[u8]) -> Result<Answer> {
    let split = raw
        .windows(4)
        .position(|window| window == b"\r\n\r\n")
        .context("no end of headers")?;
    let head = std::str::from_utf8(&raw[..split]).context("headers are not UTF-8")?;
    let mut lines = head.split("\r\n");
    let status = lines
        .next()
        .and_then(|line| line.split_whitespace().nth(1))
        .and_then(|code| code.parse().ok())
        .context("no status line")?;
    let headers = lines
        .filter_map(|line| line.split_once(':'))
        .map(|(name, value)| (name.trim().to_ascii_lowercase(), value.trim().to_string()))
        .collect();
    let answer = Answer {
        status,
        headers,
        body: raw[split + 4..].to_vec(),
    };
    ensure!(
        answer.header("transfer-encoding").is_none(),
        "a chunked body, which this reader does not decode"
    );
    Ok(answer)
}

/// The first `/assets/…` path `index.html` names (the glue module or the stylesheet).
fn first_asset(index: &str) -> Option<String> {
    let start = index.find("/assets/")?;
    let rest = &index[start..];
    let end = rest.find(['"', '\'', ' ', '>'])?;
    Some(rest[..end].to_string())
}

/// Fails unless the musl target is installed, installing it through rustup when missing.
fn ensure_musl_target() -> Result<()> {
    let installed = util::read(util::command("rustup").args(["target", "list", "--installed"]))?;
    if installed.lines().any(|line| line.trim() == TARGET) {
        return Ok(());
    }
    util::run(util::command("rustup").args(["target", "add", TARGET]))
}

/// The tools the image needs that this machine lacks, each as a sentence saying how to install it.
fn missing_tools() -> Vec<String> {
    [("buildah", "buildah"), (MUSL_GCC, "musl-tools")]
        .into_iter()
        .filter(|(program, _)| !util::on_path(program))
        .map(|(program, package)| {
            format!("`{program}` is missing: install it with `apt-get install -y {package}`")
        })
        .collect()
}

/// `cargo xtask test`'s image step: builds the image from the `dist/` the run built and smoke-tests it;
/// returns whether it ran. Without buildah or musl-gcc it is skipped with a warning on a developer's
/// machine, and fails on CI (`CI` set), where `.ci/run` installs both.
pub fn test_step() -> Result<bool> {
    // A developer may leave it out of a local run (a second build of every dependency, for musl); CI never
    // does.
    if std::env::var_os("TOWER_TEST_IMAGE").is_some_and(|v| v == "0") && !on_ci() {
        println!("skipping the image and its smoke test: TOWER_TEST_IMAGE=0");
        return Ok(false);
    }
    let missing = missing_tools();
    if !missing.is_empty() {
        if on_ci() {
            bail!("CI must build the image: {}", missing.join("; "));
        }
        println!(
            "warning: skipping the image and its smoke test: {}",
            missing.join("; ")
        );
        return Ok(false);
    }
    smoke(&build(QUICK_PROFILE)?)?;
    Ok(true)
}

/// Whether this is a CI run, where nothing may be skipped for want of a tool.
fn on_ci() -> bool {
    std::env::var_os("CI").is_some_and(|ci| !ci.is_empty() && ci != "false" && ci != "0")
}

fn recreate(dir: &Path) -> Result<()> {
    match fs::remove_dir_all(dir) {
        Ok(()) => {}
        Err(err) if err.kind() == std::io::ErrorKind::NotFound => {}
        Err(err) => return Err(err).with_context(|| format!("removing {}", dir.display())),
    }
    fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))
}

fn remove_file(path: &Path) -> Result<()> {
    match fs::remove_file(path) {
        Ok(()) => Ok(()),
        Err(err) if err.kind() == std::io::ErrorKind::NotFound => Ok(()),
        Err(err) => Err(err).with_context(|| format!("removing {}", path.display())),
    }
}

fn set_mode(path: &Path, mode: u32) -> Result<()> {
    use std::os::unix::fs::PermissionsExt as _;
    fs::set_permissions(path, fs::Permissions::from_mode(mode))
        .with_context(|| format!("setting the mode of {}", path.display()))
}

fn file_size(path: &Path) -> Result<u64> {
    Ok(fs::metadata(path)
        .with_context(|| format!("reading {}", path.display()))?
        .len())
}

/// A size in MiB with one decimal, or KiB below one MiB.
fn human(bytes: u64) -> String {
    #[allow(clippy::cast_precision_loss)]
    let bytes = bytes as f64;
    if bytes >= 1024.0 * 1024.0 {
        format!("{:.1} MiB", bytes / 1024.0 / 1024.0)
    } else {
        format!("{:.1} KiB", bytes / 1024.0)
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;

    #[test]
    fn an_answer_is_read_with_its_status_headers_and_body() {
        let raw = b"HTTP/1.1 200 OK\r\nContent-Type: text/html\r\ncache-control: no-cache\r\n\r\n<!doctype html>";
        let answer = parse_answer(raw).unwrap();
        assert_eq!(answer.status, 200);
        assert_eq!(answer.header("content-type"), Some("text/html"));
        assert_eq!(answer.header("Cache-Control"), Some("no-cache"));
        assert_eq!(answer.body, b"<!doctype html>");
    }

    #[test]
    fn the_index_names_its_first_hashed_asset() {
        let index = r#"<link rel="stylesheet" href="/assets/tower-0123.css"><script type="module" src="/assets/tower-4567.js"></script>"#;
        assert_eq!(
            first_asset(index).as_deref(),
            Some("/assets/tower-0123.css")
        );
        assert_eq!(first_asset("<title>Tower</title>"), None);
    }

    #[test]
    fn a_digest_that_could_leave_the_blob_folder_is_refused() {
        let layout = Path::new("/oci");
        let ok = serde_json::json!({"digest": "sha256:00ff"});
        assert_eq!(
            blob(layout, &ok).unwrap(),
            Path::new("/oci/blobs/sha256/00ff")
        );
        for digest in ["sha256:../../etc", "../x:00", "sha256"] {
            assert!(blob(layout, &serde_json::json!({ "digest": digest })).is_err());
        }
    }
}
