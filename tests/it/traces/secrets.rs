//! No span name, field or event of this crate carries a share link, a
//! permission id or a token: a subscriber that records every one of them
//! (a `tracing-subscriber` layer over the registry, installed for the whole
//! process, so it runs alone in a child process) watches requests of every
//! kind, a cold load, a hit, an error, the POST form and MCP. And a
//! host's subscriber sees our request span inside its own.

use crate::common::mcp::call;
use crate::common::*;
use serde_json::json;
use std::sync::{Arc, Mutex};
use tracing::field::{Field, Visit};
use tracing::span::{Attributes, Id, Record};
use tracing::{Event, Subscriber};
use tracing_subscriber::layer::{Context, SubscriberExt as _};
use tracing_subscriber::Layer;

/// Every span name, field and event this crate opened, as text.
#[derive(Clone, Default)]
pub struct Recorded(Arc<Mutex<Vec<String>>>);

struct Text<'a>(&'a mut Vec<String>);

impl Visit for Text<'_> {
    fn record_debug(&mut self, field: &Field, value: &dyn std::fmt::Debug) {
        self.0.push(format!("{}={value:?}", field.name()));
    }
    fn record_str(&mut self, field: &Field, value: &str) {
        self.0.push(format!("{}={value}", field.name()));
    }
}

impl<S: Subscriber> Layer<S> for Recorded {
    fn on_new_span(&self, attrs: &Attributes<'_>, _: &Id, _: Context<'_, S>) {
        let mut out = self.0.lock().unwrap();
        out.push(format!("span {}", attrs.metadata().name()));
        attrs.record(&mut Text(&mut out));
    }
    fn on_record(&self, _: &Id, values: &Record<'_>, _: Context<'_, S>) {
        values.record(&mut Text(&mut self.0.lock().unwrap()));
    }
    fn on_event(&self, event: &Event<'_>, _: Context<'_, S>) {
        let mut out = self.0.lock().unwrap();
        out.push(format!("event {}", event.metadata().name()));
        event.record(&mut Text(&mut out));
    }
}

impl Recorded {
    /// Installs the recorder for this crate's spans and events, process-wide.
    pub fn install() -> Self {
        let recorded = Recorded::default();
        let only_ours =
            tracing_subscriber::filter::filter_fn(|m| m.target().starts_with("shared_board_api"));
        let subscriber =
            tracing_subscriber::registry().with(recorded.clone().with_filter(only_ours));
        tracing::subscriber::set_global_default(subscriber).expect("the only subscriber");
        recorded
    }

    pub fn text(&self) -> String {
        self.0.lock().unwrap().join("\n")
    }
}

#[test]
fn no_span_or_event_holds_a_share_link_or_permission_id() {
    if !in_own_process(
        module_path!(),
        "no_span_or_event_holds_a_share_link_or_permission_id",
    ) {
        return;
    }
    let recorded = Recorded::install();
    let gw = start_gateway("", "");
    // A permission id of this test's own, which the sample grants as
    // ordinary access ("demo" and anything not a fault name).
    let permission = "tr4ceS3cretPerm";
    let share = format!("https://app.milanote.com/{BOARD}/slug?p={permission}");
    let q = format!("/api/detail?url={}", link(BOARD, permission));
    assert_eq!(request(gw.addr, "GET", &q, &[]).status, 200, "cold");
    assert_eq!(request(gw.addr, "GET", &q, &[]).status, 200, "hit");
    let q = format!("/api/search?url={}&view=huge", link(BOARD, permission));
    assert_eq!(request(gw.addr, "GET", &q, &[]).status, 400);
    let q = format!("/api/detail?url={}", link("NoSuchBoard42", permission));
    request(gw.addr, "GET", &q, &[]);
    let body = json!({"url": share}).to_string();
    assert_eq!(post_json(gw.addr, "/api/board", &body, &[]).status, 200);
    let r = call(gw.addr, "read_board", json!({"url": share}));
    assert_eq!(r.status, 200);
    drop(gw);

    let text = recorded.text();
    for name in [
        "span shared_board_api.request",
        "span shared_board_api.load",
        "span shared_board_api.upstream",
        "span shared_board_api.build",
        "span shared_board_api.render",
        "span shared_board_api.mcp",
    ] {
        assert!(text.contains(name), "{name} was opened:\n{text}");
    }
    assert!(
        text.contains("route=detail") && text.contains("status=200"),
        "{text}"
    );
    for secret in [permission, "p=", "milanote.com", "token"] {
        assert!(!text.contains(secret), "{secret:?} in a span:\n{text}");
    }
}

/// A span's name and its parent's name.
type Opened = (String, Option<String>);

/// Each span's name and its parent's name, as a host's subscriber sees them.
#[derive(Clone, Default)]
struct Parents(Arc<Mutex<Vec<Opened>>>);

impl<S> Layer<S> for Parents
where
    S: Subscriber + for<'a> tracing_subscriber::registry::LookupSpan<'a>,
{
    fn on_new_span(&self, attrs: &Attributes<'_>, id: &Id, ctx: Context<'_, S>) {
        let parent = ctx
            .span(id)
            .and_then(|s| s.parent())
            .map(|p| p.name().to_owned());
        self.0
            .lock()
            .unwrap()
            .push((attrs.metadata().name().to_owned(), parent));
    }
}

#[test]
fn the_request_span_is_a_child_of_the_hosts_span() {
    // The subscriber is this thread's only (`with_default`), as is the
    // runtime the request runs on: no other test's spans reach it.
    let parents = Parents::default();
    let subscriber = tracing_subscriber::registry().with(parents.clone());
    let settings = shared_board_api::config::Settings::from_yaml(&config(0, "", ""))
        .expect("config")
        .api()
        .clone();
    let api = shared_board_api::BoardApi::new(&settings).expect("api");
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("runtime");
    tracing::subscriber::with_default(subscriber, || {
        let host = tracing::info_span!("host.request");
        let (method, headers) = (http::Method::GET, http::HeaderMap::new());
        let query = format!("url={}", link(BOARD, "hostSpanPerm"));
        let parts =
            shared_board_api::RequestParts::new(&method, "/api/detail", Some(&query), &headers);
        let answer = runtime.block_on(tracing::Instrument::instrument(api.respond(parts), host));
        assert_eq!(answer.expect("ours").status, 200);
    });
    let seen = parents.0.lock().unwrap().clone();
    let parent_of = |name: &str| {
        seen.iter()
            .find(|(n, _)| n == name)
            .unwrap_or_else(|| panic!("{name} opened: {seen:?}"))
            .1
            .clone()
    };
    assert_eq!(
        parent_of("shared_board_api.request").as_deref(),
        Some("host.request")
    );
    assert_eq!(
        parent_of("shared_board_api.load").as_deref(),
        Some("shared_board_api.request")
    );
}
