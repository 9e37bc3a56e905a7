//! The `shared-board-api` binary: Pingora's `Opt` (`-c`, `-t`, `-d`, `-u`)
//! plus `--demo`.
//!
//! Run the demo (no internet needed): `cargo run --release -- --demo`, then
//!   curl 'http://127.0.0.1:8080/api/search?url=https%3A%2F%2Fapp.milanote.com%2F1W3ZZU1Qvua02H%2Fdemo%3Fp%3Ddemo'
//! Run against Milanote: `shared-board-api -c conf/gateway.yaml`; check a
//! file: `shared-board-api -t -c conf/gateway.yaml`.

use clap::Parser;
use pingora_core::server::configuration::{Opt, ServerConf};
use pingora_core::server::Server;
use shared_board_api::config::{ConfigError, Settings};
use shared_board_api::demo::SampleUpstream;
use std::process::ExitCode;

#[derive(Parser)]
#[command(
    name = "shared-board-api",
    about = "Serve shared Milanote boards as JSON, on Pingora"
)]
struct Cli {
    #[command(flatten)]
    pingora: Opt,
    /// Serve the bundled sample boards on 127.0.0.1:8080, offline.
    #[arg(long)]
    demo: bool,
}

const DEMO_CONF: &str = include_str!("../conf/demo.yaml");
/// Board and permission ids of the bundled demo share link.
const DEMO_BOARD: &str = "1W3ZZU1Qvua02H";
const DEMO_PERMISSION: &str = "demo";

fn main() -> ExitCode {
    // Every record, ours and Pingora's, passes the share-link scrubber.
    let _ = shared_board_api::logging::init();
    let cli = Cli::parse();
    let settings = if cli.demo {
        // `--demo -c FILE` runs FILE's settings against the sample upstream.
        let text = match &cli.pingora.conf {
            Some(path) => std::fs::read_to_string(path).unwrap_or_else(|e| {
                eprintln!("shared-board-api: cannot read {path}: {e}");
                std::process::exit(2)
            }),
            None => DEMO_CONF.to_string(),
        };
        demo_settings(&text).map(|(settings, sample)| (settings, Some(sample)))
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
    // `_sample` keeps the demo's upstream serving until the process exits.
    let (settings, _sample) = match settings {
        Ok(s) => s,
        Err(e) => {
            eprintln!("shared-board-api: invalid configuration: {e}");
            return ExitCode::from(2);
        }
    };
    if cli.pingora.test {
        println!("shared-board-api: board_api configuration is valid");
    }
    let server = if cli.demo && cli.pingora.conf.is_none() {
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
    // With -t, Pingora exits here after checking its own keys.
    server.bootstrap();

    if let Err(e) = shared_board_api::host::service::add_services(&mut server, &settings) {
        eprintln!("shared-board-api: cannot start: {e}");
        return ExitCode::from(2);
    }
    if cli.demo {
        print_demo_help(&settings);
    }
    server.run_forever()
}

/// Starts the bundled sample upstream on a loopback port, on its own thread,
/// and points the demo configuration at it. The upstream serves as long as
/// the returned handle lives.
fn demo_settings(conf: &str) -> Result<(Settings, SampleUpstream), ConfigError> {
    let mut settings = Settings::from_yaml(conf)?;
    let sample = SampleUpstream::start_in_thread(([127, 0, 0, 1], 0).into()).map_err(|e| {
        ConfigError::new("--demo", format!("cannot start the sample upstream: {e}"))
    })?;
    settings.api_mut().set_provider_origin(&sample.origin())?;
    Ok((settings, sample))
}

fn print_demo_help(settings: &Settings) {
    let base = settings
        .listen()
        .first()
        .map(|a| format!("http://{a}"))
        .unwrap_or_default();
    let prefix = settings.api().prefix();
    let link = format!("https://app.milanote.com/{DEMO_BOARD}/demo?p={DEMO_PERMISSION}");
    let url: String = url::form_urlencoded::byte_serialize(link.as_bytes()).collect();
    println!("\nshared-board-api demo: serving the bundled sample boards on {base}");
    println!(
        "sample Milanote upstream: {}",
        settings.api().provider_origin()
    );
    if settings.playground() {
        println!("playground: open {base}/ in a browser");
    }
    println!();
    println!("Try:");
    println!("  curl -s '{base}{prefix}/search?url={url}'");
    println!("  curl -s '{base}{prefix}/detail?url={url}'");
    println!("  curl -s '{base}{prefix}/detail?url={url}&view=standard'");
    println!("  curl -s '{base}{prefix}/search?url={url}&include=board.**.title'");
    println!("  curl -s '{base}{prefix}/detail?url={url}&exclude=**.timestamps'");
    println!("  curl -s -H 'Accept: text/markdown' '{base}{prefix}/detail?url={url}'");
    println!("  curl -si '{base}{prefix}/search?url={url}&include=board.password'");
    println!("  curl -si '{base}{prefix}/search?url=https%3A%2F%2Fexample.com%2Fx%3Fp%3Dy'\n");
}
