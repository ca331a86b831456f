//! Fuzzing the configuration file: near-valid files with hostile values, keys and YAML spliced in. Tower
//! must never panic on its own configuration, and every refusal must say where: a key, or a line and column.
//! Bounded (see each config) so it runs in seconds in `cargo xtask test`; a failing case is saved under
//! `server/proptest-regressions/` and replayed first.

use proptest::prelude::*;

use super::LoadError;
use super::load::parse;

/// A configuration using every section, each key once.
const FULL: &str = "\
listen: 127.0.0.1:8080
public_url: http://tower.test
organisation: acme
clusters:
  - name: management
    url: https://mgmt.example
    token: t
  - name: dev
    environment: dev
    context: dev
  - name: prod
    environment: prod
    url: https://prod.example
argocd:
  - name: argocd
    url: https://argocd.example
    token: argocd-token
github:
  api_url: https://api.github.example/
  oauth_authorize_url: https://github.example/login/oauth/authorize
  oauth_token_url: https://github.example/login/oauth/access_token
  client_id: Iv1.public
  client_secret: secret
  app_id: 1
  installation_id: 2
  app_private_key: |
    -----BEGIN PRIVATE KEY-----
    MC4CAQAwBQYDK2VwBCIEIA==
    -----END PRIVATE KEY-----
labels:
  component: platform.tower.dev/component
crossplane_claims:
  - {group: db.example, version: v1, kind: Db, plural: dbs}
";

/// Values and syntax a careless or hostile operator could write.
const HOSTILE: &[&str] = &[
    "",
    "~",
    "null",
    "[]",
    "{}",
    "-1",
    "99999999999999999999999999999",
    "18446744073709551616",
    "1e999",
    ".nan",
    "0x10",
    "yes",
    "'",
    "\"",
    "\"\\u0000\"",
    "&a",
    "*a",
    "*undefined",
    "<<: *a",
    "!!binary",
    "!custom",
    "---",
    "%YAML 1.1",
    "\t",
    "\r",
    "\u{0}",
    "\u{1b}[2J",
    "\u{feff}",
    "🦀",
    "../../etc/passwd",
    "http://",
    "https://",
    "javascript:alert(1)",
    "127.0.0.1:99999",
    "[::1]:8080",
    ":",
    "- ",
    "{",
    "[",
    "colour: blue",
];

/// The lines of [`FULL`] whose value can be swapped: `key: value` with a scalar value.
fn scalar_lines() -> Vec<(usize, &'static str)> {
    FULL.lines()
        .enumerate()
        .filter(|(_, line)| {
            line.split_once(": ")
                .is_some_and(|(_, value)| !value.starts_with('{'))
        })
        .collect()
}

/// A file made from [`FULL`] by one of the edits an operator (or an attacker with write access to the
/// ConfigMap) could make.
fn hostile_file() -> impl Strategy<Value = String> {
    let piece = prop_oneof![
        3 => prop::sample::select(HOSTILE).prop_map(str::to_string),
        1 => any::<char>().prop_map(String::from),
        1 => "[a-z_]{1,12}",
    ];
    let pieces = prop::collection::vec(piece, 1..4).prop_map(|p| p.concat());
    let value = (any::<prop::sample::Index>(), pieces.clone()).prop_map(|(line, value)| {
        let lines = scalar_lines();
        let (at, chosen) = lines[line.index(lines.len())];
        let key = chosen.split_once(": ").map_or(chosen, |(key, _)| key);
        FULL.lines()
            .enumerate()
            .map(|(i, l)| {
                if i == at {
                    format!("{key}: {value}")
                } else {
                    l.to_string()
                }
            })
            .collect::<Vec<_>>()
            .join("\n")
    });
    let splice = (any::<prop::sample::Index>(), pieces).prop_map(|(at, piece)| {
        let chars: Vec<char> = FULL.chars().collect();
        let at = at.index(chars.len() + 1);
        chars[..at]
            .iter()
            .chain(piece.chars().collect::<Vec<_>>().iter())
            .chain(&chars[at..])
            .collect()
    });
    let cut = any::<prop::sample::Index>().prop_map(|at| {
        let chars: Vec<char> = FULL.chars().collect();
        chars[..at.index(chars.len() + 1)].iter().collect()
    });
    let nested = (
        1usize..2_000,
        prop::sample::select(vec!["[", "{a: ", "clusters: ["]),
    )
        .prop_map(|(depth, open)| open.repeat(depth));
    let laughs = (1usize..40).prop_map(|levels| {
        let mut text = format!("{FULL}x:\n  l0: &l0 [x, x]\n");
        for level in 1..levels {
            text.push_str(&format!(
                "  l{level}: &l{level} [*l{p}, *l{p}]\n",
                p = level - 1
            ));
        }
        text
    });
    prop_oneof![4 => value, 4 => splice, 1 => cut, 1 => nested, 1 => laughs]
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(1_500))]

    /// Loading a hostile configuration never panics, and every refusal says where: each problem names a key,
    /// a syntax error its line and column.
    #[test]
    fn fuzz_config_file_is_loaded_or_refused_naming_a_key(text in hostile_file()) {
        match parse("tower.yaml", &text, |_| None) {
            Ok(config) => prop_assert!(config.validate().is_empty()),
            Err(LoadError::Invalid { errors, .. }) => {
                prop_assert!(!errors.is_empty());
                for error in &errors {
                    prop_assert!(!error.key.trim().is_empty(), "{error:?}\n{text}");
                    prop_assert!(!error.message.trim().is_empty(), "{error:?}\n{text}");
                }
            }
            Err(LoadError::Parse { message, .. }) => {
                prop_assert!(!message.trim().is_empty(), "{text}");
                prop_assert!(
                    message.contains("line") || message.contains('`'),
                    "says neither where nor which key: {message}\n{text}"
                );
            }
            Err(error @ LoadError::Read { .. }) => prop_assert!(false, "read nothing: {error}"),
        }
    }

    /// An override from the environment is a value like any other: hostile ones are refused by key.
    #[test]
    fn fuzz_environment_overrides_are_validated(value in prop::sample::select(HOSTILE)) {
        let result = parse("tower.yaml", FULL, |key| (key == "TOWER_LISTEN").then(|| value.to_string()));
        if let Err(LoadError::Invalid { errors, .. }) = result {
            prop_assert!(errors.iter().all(|e| !e.key.is_empty()));
        }
    }
}

#[test]
fn the_full_sample_loads() {
    if let Err(error) = parse("tower.yaml", FULL, |_| None) {
        panic!("{error}");
    }
}
