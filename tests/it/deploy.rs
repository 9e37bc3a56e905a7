//! The unit and container files docs/operations.md uses, read as their
//! tools would (no systemd or container runtime here): the systemd unit's
//! pid file is the one conf/gateway.yaml names, its directory is the unit's
//! runtime directory, every command it runs is this binary with flags the
//! binary takes; the container file copies files that exist, checks its
//! configuration with -t, and exposes the ports that configuration uses.

use std::collections::HashMap;

const ROOT: &str = env!("CARGO_MANIFEST_DIR");

fn read(path: &str) -> String {
    std::fs::read_to_string(format!("{ROOT}/{path}")).unwrap_or_else(|e| panic!("{path}: {e}"))
}

/// `Key=value` lines of an INI-style unit, every value of a repeated key.
fn unit(text: &str) -> HashMap<String, Vec<String>> {
    let mut keys: HashMap<String, Vec<String>> = HashMap::new();
    for line in text.lines().map(str::trim) {
        if line.is_empty() || line.starts_with('#') || line.starts_with('[') {
            continue;
        }
        let (k, v) = line
            .split_once('=')
            .unwrap_or_else(|| panic!("not key=value: {line}"));
        keys.entry(k.to_string()).or_default().push(v.to_string());
    }
    keys
}

/// The instruction that starts with `first`, joined with its `\\`
/// continuation lines.
fn continued(text: &str, first: &str) -> String {
    let mut lines = text.lines().skip_while(|l| !l.contains(first));
    let mut out = String::new();
    for line in lines.by_ref() {
        out.push_str(line.trim_end_matches('\\'));
        out.push(' ');
        if !line.ends_with('\\') {
            break;
        }
    }
    out
}

fn yaml(path: &str) -> serde_yaml::Value {
    serde_yaml::from_str(&read(path)).expect("YAML")
}

#[test]
fn the_systemd_unit_runs_this_binary_with_the_sample_files() {
    let keys = unit(&read("deploy/shared-board-api.service"));
    let one = |k: &str| {
        keys.get(k)
            .and_then(|v| v.first())
            .cloned()
            .unwrap_or_else(|| panic!("{k}"))
    };
    assert_eq!(one("Type"), "forking");
    let gateway = yaml("conf/gateway.yaml");
    let pid = gateway["pid_file"].as_str().expect("pid_file");
    let sock = gateway["upgrade_sock"].as_str().expect("upgrade_sock");
    assert_eq!(one("PIDFile"), pid);
    let run_dir = format!("/run/{}", one("RuntimeDirectory"));
    for path in [pid, sock] {
        assert!(
            path.starts_with(&format!("{run_dir}/")),
            "{path} outside {run_dir}"
        );
    }
    // Every command is this binary with its own flags, or a signal to it.
    let flags = ["-t", "-d", "-u", "-c"];
    for key in ["ExecStartPre", "ExecStart", "ExecReload", "ExecStop"] {
        for command in &keys[key] {
            let words: Vec<&str> = command.split_whitespace().collect();
            if words[0] == "/bin/kill" {
                assert!(
                    matches!(words[1], "-QUIT" | "-TERM") && words[2] == "$MAINPID",
                    "{command}"
                );
                continue;
            }
            assert!(words[0].ends_with("/shared-board-api"), "{command}");
            let (last, rest) = words[1..].split_last().expect("arguments");
            assert!(rest.iter().all(|w| flags.contains(w)), "{command}");
            assert_eq!(*last, "/etc/shared-board-api/gateway.yaml", "{command}");
        }
    }
    // Start checks with the daemon's flags; reload checks for an upgrade,
    // signals the old process and starts the new one in upgrade mode.
    assert!(keys["ExecStartPre"][0].contains(" -t -d "));
    assert!(keys["ExecStart"][0].contains(" -d "));
    let reload = &keys["ExecReload"];
    assert_eq!(reload.len(), 3);
    assert!(reload[0].contains(" -t -u "));
    assert!(reload[1].contains("-QUIT"));
    assert!(reload[2].contains(" -u -d "));
}

#[test]
fn the_container_file_builds_checks_and_exposes_what_its_configuration_uses() {
    let text = read("deploy/Containerfile");
    let instructions: Vec<(&str, &str)> = text
        .lines()
        .filter(|l| !l.trim().is_empty() && !l.starts_with('#') && !l.starts_with(' '))
        .filter_map(|l| l.split_once(' '))
        .collect();
    let from: Vec<&str> = instructions
        .iter()
        .filter(|(i, _)| *i == "FROM")
        .map(|(_, a)| *a)
        .collect();
    assert_eq!(from.len(), 2, "a build stage and a runtime stage");
    // The build stage's toolchain is at least the crate's rust-version.
    let rust = from[0].split([':', '-']).nth(1).expect("rust:<version>");
    let cargo = read("Cargo.toml");
    let wanted = cargo
        .lines()
        .find_map(|l| l.strip_prefix("rust-version = "))
        .expect("rust-version")
        .trim_matches('"');
    // Exactly it: rust-version is the floor the lock needs, and the image
    // is the build that proves it.
    assert_eq!(rust, wanted, "the build stage's toolchain is rust-version");
    let build = instructions
        .iter()
        .filter(|(i, _)| *i == "RUN")
        .map(|(_, a)| continued(&text, a))
        .find(|run| run.contains("cargo build"))
        .expect("a cargo build");
    // The production profile, declared in Cargo.toml, and its binary is
    // what the runtime stage copies.
    for part in [
        "--profile production",
        "--locked",
        "CARGO_PROFILE_PRODUCTION_DEBUG=false",
        "CARGO_PROFILE_PRODUCTION_STRIP=symbols",
    ] {
        assert!(build.contains(part), "{part} missing from {build}");
    }
    assert!(
        cargo.contains("\n[profile.production]\n"),
        "Cargo.toml declares it"
    );
    assert!(
        text.contains("COPY --from=build /src/target/production/shared-board-api "),
        "the runtime stage copies the production binary"
    );
    // Files copied from the repository exist; the configuration is checked.
    let mut config = None;
    for (_, args) in instructions.iter().filter(|(i, _)| *i == "COPY") {
        let words: Vec<&str> = args.split_whitespace().collect();
        if words[0].starts_with("--from") {
            continue;
        }
        if words[0] != "." {
            assert!(std::path::Path::new(ROOT).join(words[0]).exists(), "{args}");
            config = Some((words[0], words[1]));
        }
    }
    let (source, target) = config.expect("a configuration copied in");
    assert!(
        text.contains(&format!("shared-board-api -t -c {target}")),
        "checked with -t"
    );
    assert!(
        text.contains(&format!("\"-c\", \"{target}\"")),
        "run with it"
    );
    // The ports it exposes are the ones that file listens on, on every address.
    let conf = yaml(source);
    let server = &conf["board_api"]["server"];
    let mut listens: Vec<String> = server["listen"]
        .as_sequence()
        .expect("listen")
        .iter()
        .map(|v| v.as_str().expect("address").to_string())
        .collect();
    listens.push(
        server["metrics"]["listen"]
            .as_str()
            .expect("metrics")
            .to_string(),
    );
    let exposed: Vec<&str> = instructions
        .iter()
        .filter(|(i, _)| *i == "EXPOSE")
        .flat_map(|(_, a)| a.split_whitespace())
        .collect();
    for listen in &listens {
        let (host, port) = listen.rsplit_once(':').expect("host:port");
        assert_eq!(
            host, "0.0.0.0",
            "{listen} is not reachable from outside the container"
        );
        assert!(exposed.contains(&port), "{port} not exposed");
    }
    // Pid file and socket where the unprivileged user may write.
    for key in ["pid_file", "upgrade_sock"] {
        assert!(conf[key].as_str().expect(key).starts_with("/tmp/"), "{key}");
    }
}

/// `COPY . .` sends the build context: the checkout less what
/// `.dockerignore` leaves out. Build output (gigabytes after the tests) and
/// the fuzz corpus stay out; everything the build reads stays in.
#[test]
fn the_build_context_leaves_out_build_output() {
    let ignore = read(".dockerignore");
    let patterns: Vec<&str> = ignore
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty() && !l.starts_with('#'))
        .collect();
    for out in ["target/", "fuzz/target/", "fuzz/corpus/"] {
        assert!(patterns.contains(&out), "{out} is sent to the build");
    }
    // What `cargo build` reads is never ignored.
    for needed in [
        "Cargo.toml",
        "Cargo.lock",
        "build.rs",
        "src",
        "assets",
        "conf",
        "schema",
        "deploy",
        "pingap-plugin",
    ] {
        assert!(
            std::path::Path::new(ROOT).join(needed).exists(),
            "{needed} is gone"
        );
        for p in &patterns {
            let p = p.trim_end_matches('/').trim_start_matches('/');
            assert!(
                p != needed && !needed.starts_with(&format!("{p}/")),
                "{p} leaves out {needed}"
            );
        }
    }
}
