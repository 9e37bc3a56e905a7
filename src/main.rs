//! The `shared-board-api` binary: Pingora's `Opt` (`-c`, `-t`, `-d`, `-u`)
//! plus `--demo`.
//!
//! Run the demo (no internet needed): `cargo run --release -- --demo`, then
//!   curl 'http://127.0.0.1:8080/api/search?url=https%3A%2F%2Fapp.milanote.com%2F1W3ZZU1Qvua02H%2Fdemo%3Fp%3Ddemo'
//! Run against Milanote: `shared-board-api -c conf/gateway.yaml`; check a
//! file: `shared-board-api -t -c conf/gateway.yaml`.
//! Capture a board for a bug report: `shared-board-api -c conf/gateway.yaml
//! --capture '<share link>' --out DIR`; replay it offline: `--demo DIR`.

use async_trait::async_trait;
use clap::{CommandFactory, FromArgMatches, Parser};
use pingora_core::server::configuration::{Opt, ServerConf};
use pingora_core::server::{RunArgs, Server, ShutdownWatch};
use pingora_core::services::background::{background_service, BackgroundService};
use shared_board_api::config::{ConfigError, Settings};
use shared_board_api::demo::{Captured, SampleUpstream};
use shared_board_api::host::preflight::{self, Mode};
use shared_board_api::host::upgrade::HandOver;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::Mutex;

#[derive(Parser)]
#[command(
    name = "shared-board-api",
    version,
    about = "Serve shared Milanote boards as JSON and Markdown, and to agents over MCP, on Pingora"
)]
struct Cli {
    #[command(flatten)]
    pingora: Opt,
    /// Serve the bundled sample boards on 127.0.0.1:8080, offline; with
    /// DIR, also the boards captured there (with --capture).
    #[arg(long, value_name = "DIR", num_args = 0..=1)]
    demo: Option<Option<PathBuf>>,
    /// With --demo: serve on ADDR (e.g. 127.0.0.1:8090) instead of the
    /// configuration's listeners (127.0.0.1:8080 in the built-in one).
    #[arg(long, value_name = "ADDR", requires = "demo")]
    listen: Option<SocketAddr>,
    /// Fetch the board of this share link through the configured provider
    /// and write each answer to --out, with the token, the permission id and
    /// person ids replaced by placeholders; then exit.
    #[arg(
        long,
        value_name = "SHARE_LINK",
        requires = "out",
        conflicts_with = "demo"
    )]
    capture: Option<String>,
    /// The directory --capture writes to (created; must be empty).
    #[arg(long, value_name = "DIR", requires = "capture")]
    out: Option<PathBuf>,
}

/// Panics are logged (through the share-link scrubber) with their message,
/// thread and place, never with a backtrace, whatever `RUST_BACKTRACE` says:
/// std's default hook resolves a backtrace's symbols from the binary's debug
/// information, which the first time maps and parses it whole (about 200 MB
/// of resident memory kept for the life of the process, on a release build
/// with `debug = 1`). A panic in a request task ends that request (Pingora
/// catches it); its message and place are what finds the bug. Library
/// backtraces (`std::backtrace::Backtrace::capture`) are off as well
/// (`RUST_LIB_BACKTRACE=0`, set before any thread starts).
fn quiet_panics() {
    std::panic::set_hook(Box::new(|info| {
        let thread = std::thread::current();
        let name = thread.name().unwrap_or("<unnamed>");
        log::error!("thread '{name}' {info} (no backtrace is captured: docs/operations.md)");
    }));
}

const DEMO_CONF: &str = include_str!("../conf/demo.yaml");
/// Board and permission ids of the bundled demo share link.
const DEMO_BOARD: &str = "1W3ZZU1Qvua02H";
const DEMO_PERMISSION: &str = "demo";
/// The sample upstream's big board (src/demo/big.rs), any permission id.
const DEMO_BIG_BOARD: &str = "s-big";

fn main() -> ExitCode {
    // Before any thread starts: no backtrace is ever captured (see `quiet_panics`).
    std::env::set_var("RUST_LIB_BACKTRACE", "0");
    // Every record, ours and Pingora's, passes the share-link scrubber.
    let _ = shared_board_api::logging::init();
    quiet_panics();
    let cli = parse_cli();
    if let (Some(link), Some(out)) = (&cli.capture, &cli.out) {
        return capture(cli.pingora.conf.as_deref(), link, out);
    }
    let captured = match cli.demo.as_ref().and_then(Option::as_deref) {
        Some(dir) => match Captured::load(dir) {
            Ok(captured) => captured,
            Err(e) => {
                eprintln!("shared-board-api: --demo: {e}");
                return ExitCode::from(2);
            }
        },
        None => Captured::default(),
    };
    let demo = cli.demo.is_some();
    // What the demo's help says of the capture (the boards move to the sample).
    let captured_help = captured
        .root()
        .map(|root| (root.to_owned(), captured.board_ids().len()));
    let settings = if demo {
        // `--demo -c FILE` runs FILE's settings against the sample upstream.
        let text = match &cli.pingora.conf {
            Some(path) => std::fs::read_to_string(path).unwrap_or_else(|e| {
                eprintln!("shared-board-api: cannot read {path}: {e}");
                std::process::exit(2)
            }),
            None => DEMO_CONF.to_string(),
        };
        demo_settings(&text, captured, cli.listen)
            .map(|(settings, sample)| (settings, Some(sample)))
    } else {
        match &cli.pingora.conf {
            Some(path) => Settings::from_file(path.as_ref()).map(|s| (s, None)),
            None => {
                eprintln!(
                    "shared-board-api: pass -c <file.yaml> (see conf/gateway.yaml) or --demo"
                );
                return ExitCode::from(2);
            }
        }
    };
    let (settings, sample) = match settings {
        Ok(s) => s,
        Err(e) => {
            eprintln!("shared-board-api: invalid configuration: {e}");
            return ExitCode::from(2);
        }
    };
    let mode = Mode::default()
        .checking(cli.pingora.test)
        .upgrading(cli.pingora.upgrade);
    let server = if demo && cli.pingora.conf.is_none() {
        // The built-in demo file carries Pingora keys too (short grace period).
        ServerConf::from_yaml(DEMO_CONF)
            .map(|conf| Server::new_with_opt_and_conf(cli.pingora, conf))
    } else {
        Server::new(Some(cli.pingora))
    };
    let mut server = match server {
        Ok(s) => s,
        Err(e) => {
            eprintln!("shared-board-api: invalid Pingora configuration: {e}");
            return ExitCode::from(2);
        }
    };
    // Everything start-up would refuse, before Pingora starts (with -t, but
    // the network).
    if let Err(e) = preflight::check(&server.configuration, &settings, mode) {
        eprintln!("shared-board-api: invalid configuration: {e}");
        return ExitCode::from(2);
    }
    if let Err(e) = preflight::listeners_free(&settings, mode) {
        eprintln!("shared-board-api: cannot start: {e}");
        return ExitCode::from(2);
    }
    if mode.test {
        println!("shared-board-api: configuration is valid");
        // Pingora exits here after checking its own keys.
        server.bootstrap();
    }
    // The bootstrap (with -u: receiving the listening sockets) runs as a
    // service, after the fork of -d: `-u -d` returns to the shell at once
    // and the daemon waits on upgrade_sock, rather than waiting there in the
    // foreground for a SIGQUIT the operator has not sent yet. Pingora's
    // daemon_wait_for_ready stays off: in 0.9.1 its parent registers for
    // the daemon's SIGUSR1 only after the fork, and a daemon that is quick
    // kills it (exit 138, measured).
    let bootstrap = server.bootstrap_as_a_service();
    let upgrade_sock = server.configuration.upgrade_sock.clone();

    match shared_board_api::host::service::add_services(&mut server, &settings) {
        // The listeners take their sockets from the bootstrap.
        Ok(listeners) => listeners.iter().for_each(|l| l.add_dependency(&bootstrap)),
        Err(e) => {
            eprintln!("shared-board-api: cannot start: {e}");
            return ExitCode::from(2);
        }
    }
    if let Some(otlp) = settings.otlp() {
        // The subscriber is installed before the fork (it starts no
        // thread); its exporter runs in Pingora's runtime, after it.
        match shared_board_api::otlp::install(otlp) {
            Ok(exporter) => {
                server.add_service(background_service("span export", exporter));
            }
            Err(e) => {
                eprintln!("shared-board-api: cannot start: {e}");
                return ExitCode::from(2);
            }
        }
    }
    if let Some(sample) = sample {
        // Served from Pingora's own runtime, after any fork (`-d`).
        server.add_service(background_service("sample upstream", sample));
        print!("{}", demo_help(&settings, captured_help));
    }
    // SIGQUIT hands over only to a process that waits on upgrade_sock, and
    // keeps serving when none comes (src/host/upgrade.rs).
    let pid_file = server
        .configuration
        .daemon
        .then(|| std::path::absolute(&server.configuration.pid_file).ok())
        .flatten();
    server.run(RunArgs {
        shutdown_signal: Box::new(HandOver::new(upgrade_sock)),
    });
    // Pingora 0.9 leaves its pid file behind ("TODO: delete the pid when
    // exit"); a clean stop removes it, and the `.old` one an upgrade moved
    // it to, but only while it still names this process: a newer process
    // (an upgrade) owns it otherwise.
    if let Some(path) = pid_file {
        remove_if_ours(&path);
        let mut old = path.into_os_string();
        old.push(".old");
        remove_if_ours(Path::new(&old));
    }
    std::process::exit(0)
}

/// Removes the pid file at `path` when it holds this process's id.
fn remove_if_ours(path: &Path) {
    let ours = std::fs::read_to_string(path)
        .is_ok_and(|text| text.trim().parse::<u32>() == Ok(std::process::id()));
    if ours {
        if let Err(e) = std::fs::remove_file(path) {
            // A `user` without write access to the directory, say.
            log::info!("cannot remove the pid file {}: {e}", path.display());
        }
    }
}

/// The command line, with Pingora's flags described for this binary (its
/// `Opt` documents them for any Pingora server, `-u` with the struct's own
/// doc).
fn parse_cli() -> Cli {
    let command = Cli::command()
        .mut_arg("upgrade", |a| {
            a.help(
                "Take the listening sockets over from the running process, which hands them \
                 over on upgrade_sock once it gets SIGQUIT (docs/operations.md)",
            )
        })
        .mut_arg("daemon", |a| {
            a.help("Run in the background, writing its process id to pid_file")
        })
        .mut_arg("test", |a| {
            a.help(
                "Check the configuration, and what -d and -u would use, then exit: \
                 0 valid, 2 refused",
            )
        })
        .mut_arg("conf", |a| {
            a.help("The YAML configuration: Pingora's keys and the board_api section")
        });
    Cli::from_arg_matches(&command.get_matches()).unwrap_or_else(|e| e.exit())
}

/// Binds the bundled sample upstream's loopback port and points the demo
/// configuration at it. Nothing serves yet: the returned service does, once
/// the server runs (after Pingora's fork with `-d`, which no thread made
/// before it survives).
fn demo_settings(
    conf: &str,
    captured: Captured,
    listen: Option<SocketAddr>,
) -> Result<(Settings, DemoUpstream), ConfigError> {
    let mut settings = Settings::from_yaml(conf)?;
    if let Some(addr) = listen {
        settings.set_listen(addr);
    }
    let cannot = |e: std::io::Error| {
        ConfigError::new("--demo", format!("cannot start the sample upstream: {e}"))
    };
    // The sample writes its own origin into its image URLs, so the boards'
    // versions hold it: on the port after the API's (8081 for the built-in
    // file), the same versions come back run after run; any free port when
    // that one is taken.
    let listener = upstream_port(&settings)
        .and_then(|port| std::net::TcpListener::bind(("127.0.0.1", port)).ok())
        .map_or_else(|| std::net::TcpListener::bind(("127.0.0.1", 0)), Ok)
        .map_err(cannot)?;
    let addr = listener.local_addr().map_err(cannot)?;
    settings
        .api_mut()
        .set_provider_origin(&format!("http://{addr}"))?;
    let sample = DemoUpstream {
        parts: Mutex::new(Some((listener, captured))),
    };
    Ok((settings, sample))
}

/// The port the demo's sample upstream asks for first: the one after the
/// API's first listener, unless the API listens on port 0 (a test's) or
/// another listener of the file uses it.
fn upstream_port(settings: &Settings) -> Option<u16> {
    let port = settings.listen().first()?.port();
    let next = port.checked_add(1).filter(|_| port != 0)?;
    let taken = settings
        .listen()
        .iter()
        .chain(settings.metrics_listen().as_ref())
        .any(|a| a.port() == next);
    (!taken).then_some(next)
}

/// The demo's sample upstream as a Pingora background service: it serves
/// on the listener bound at start-up until the server shuts down.
struct DemoUpstream {
    parts: Mutex<Option<(std::net::TcpListener, Captured)>>,
}

#[async_trait]
impl BackgroundService for DemoUpstream {
    async fn start(&self, mut shutdown: ShutdownWatch) {
        let parts = self.parts.lock().ok().and_then(|mut p| p.take());
        let Some((listener, captured)) = parts else {
            return;
        };
        match SampleUpstream::serve_bound(listener, captured) {
            // Serves until shutdown; dropping it closes every connection.
            Ok(_serving) => {
                let _ = shutdown.changed().await;
            }
            Err(e) => log::error!("the sample upstream cannot serve: {e}"),
        }
    }
}

/// `--capture LINK --out DIR`: the board's answers, scrubbed, into DIR.
/// Exit 0 when the board loaded, 1 when it did not (its answers are
/// written all the same), 2 when nothing could be captured.
fn capture(conf: Option<&str>, link: &str, out: &Path) -> ExitCode {
    let Some(path) = conf else {
        eprintln!("shared-board-api: --capture needs -c <file.yaml>: the provider it configures");
        return ExitCode::from(2);
    };
    let settings = match Settings::from_file(path.as_ref()) {
        Ok(s) => s,
        Err(e) => {
            eprintln!("shared-board-api: invalid configuration: {e}");
            return ExitCode::from(2);
        }
    };
    match shared_board_api::capture::capture(&settings, link, out) {
        Ok(report) => {
            println!("{report}");
            ExitCode::from(u8::from(report.failure.is_some()))
        }
        Err(e) => {
            eprintln!("shared-board-api: {e}");
            ExitCode::from(2)
        }
    }
}

/// What `--demo` prints at start-up: where it serves, and lines to try.
fn demo_help(settings: &Settings, captured: Option<(String, usize)>) -> String {
    use std::fmt::Write as _;
    let mut out = String::new();
    let base = settings
        .listen()
        .first()
        .map(|a| format!("http://{a}"))
        .unwrap_or_default();
    let prefix = settings.api().prefix();
    let link = format!("https://app.milanote.com/{DEMO_BOARD}/demo?p={DEMO_PERMISSION}");
    let url: String = url::form_urlencoded::byte_serialize(link.as_bytes()).collect();
    let _ = writeln!(
        out,
        "\nshared-board-api demo: serving the bundled sample boards on {base}"
    );
    let _ = writeln!(
        out,
        "sample Milanote upstream: {}",
        settings.api().provider_origin()
    );
    if settings.playground() {
        let _ = writeln!(out, "playground: open {base}/ in a browser");
    }
    if let Some((root, boards)) = captured {
        let _ = writeln!(
            out,
            "captured board {root} ({boards} board{}), any permission id: \
             https://app.milanote.com/{root}/captured?p=any",
            if boards == 1 { "" } else { "s" }
        );
    }
    let _ = writeln!(out);
    let _ = writeln!(out, "Try:");
    let _ = writeln!(out, "  curl -s '{base}{prefix}/search?url={url}'");
    let _ = writeln!(out, "  curl -s '{base}{prefix}/detail?url={url}'");
    let _ = writeln!(
        out,
        "  curl -s '{base}{prefix}/detail?url={url}&view=standard'"
    );
    let _ = writeln!(
        out,
        "  curl -s '{base}{prefix}/search?url={url}&include=board.**.title'"
    );
    let _ = writeln!(
        out,
        "  curl -s '{base}{prefix}/detail?url={url}&exclude=**.timestamps'"
    );
    let _ = writeln!(
        out,
        "  curl -s -H 'Accept: text/markdown' '{base}{prefix}/detail?url={url}'"
    );
    let _ = writeln!(
        out,
        "  curl -sOJ '{base}{prefix}/canvas?url={url}'   # saves the board as <title>.canvas"
    );
    let _ = writeln!(
        out,
        "  curl -si '{base}{prefix}/search?url={url}&include=board.password'"
    );
    let _ = writeln!(
        out,
        "  curl -si '{base}{prefix}/search?url=https%3A%2F%2Fexample.com%2Fx%3Fp%3Dy'\n"
    );
    let origin = settings.api().provider_origin().trim_end_matches('/');
    let _ = writeln!(
        out,
        "What changed: keep the version you read, edit the board upstream, ask:"
    );
    let _ = writeln!(
        out,
        "  V=$(curl -sI '{base}{prefix}/detail?url={url}' | tr -d '\\r' | awk 'tolower($1)==\"board-version:\"{{print $2}}')"
    );
    let _ = writeln!(
        out,
        "  curl -s -X POST {origin}/demo/edit/{DEMO_BOARD}   # the sample upstream edits the board"
    );
    let _ = writeln!(out, "  # within the demo's 5 s cache TTL:");
    let _ = writeln!(
        out,
        "  curl -s \"{base}{prefix}/changes?url={url}&since=$V\""
    );
    let _ = writeln!(
        out,
        "  curl -s -H 'Accept: text/markdown' \"{base}{prefix}/changes?url={url}&since=$V\"\n"
    );
    let big = format!("https://app.milanote.com/{DEMO_BIG_BOARD}/big?p={DEMO_PERMISSION}");
    let big_url: String = url::form_urlencoded::byte_serialize(big.as_bytes()).collect();
    let _ = writeln!(
        out,
        "The big board (6 MB: 7,000 cards on a board and six nested ones): {big}\n  \
         curl -s -o /dev/null -w '%{{size_download}} B in %{{time_total}} s\\n' \
         '{base}{prefix}/detail?url={big_url}'\n"
    );
    if settings.api().mcp_enabled() {
        let _ = writeln!(
            out,
            "MCP for agents (read_board, search_board, board_changes; docs/mcp.md): {base}{prefix}/mcp"
        );
        let _ = writeln!(
            out,
            "  curl -s {base}{prefix}/mcp -H 'Content-Type: application/json' \
             -H 'MCP-Protocol-Version: 2025-11-25' -d '{{\"jsonrpc\":\"2.0\",\"id\":1,\
             \"method\":\"tools/call\",\"params\":{{\"name\":\"search_board\",\
             \"arguments\":{{\"url\":\"{big}\",\"query\":\"Note 4.17:\"}}}}}}'"
        );
        let _ = writeln!(
            out,
            "  an agent's config: {{\"mcpServers\":{{\"boards\":{{\"type\":\"http\",\"url\":\"{base}{prefix}/mcp\"}}}}}}\n"
        );
    }
    let _ = writeln!(
        out,
        "Watch a board (a signed webhook when it changes; docs/changes.md#watches-and-webhooks):\n  \
         add conf/watch.yaml's watch section to a copy of conf/demo.yaml, run --demo -c <copy> with\n  \
         SBAPI_WATCH_LINK='{link}' (and the receiver's SBAPI_WATCH_URL, SBAPI_WATCH_SECRET),\n  \
         then edit the board as above: the next run posts what changed"
    );
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_sample_upstream_asks_for_the_port_after_the_apis() {
        let demo = Settings::from_yaml(DEMO_CONF).expect("the demo configuration");
        assert_eq!(upstream_port(&demo), Some(8081));
        let mut any = demo.clone();
        any.set_listen("127.0.0.1:0".parse().expect("addr"));
        assert_eq!(upstream_port(&any), None);
        let mut last = demo;
        last.set_listen("127.0.0.1:65535".parse().expect("addr"));
        assert_eq!(upstream_port(&last), None);
    }

    #[test]
    fn the_demo_banner_names_the_big_board_mcp_and_watches() {
        let settings = Settings::from_yaml(DEMO_CONF).expect("the demo configuration");
        let help = demo_help(&settings, None);
        for part in [
            "https://app.milanote.com/s-big/big?p=demo",
            "http://127.0.0.1:8080/api/mcp",
            "search_board",
            "\"mcpServers\"",
            "docs/changes.md#watches-and-webhooks",
            "SBAPI_WATCH_LINK",
        ] {
            assert!(help.contains(part), "{part} in:\n{help}");
        }
    }
}
