//! No span name, field or event of this crate carries a share link, a
//! permission id or a token: a subscriber that records every one of them
//! (a `tracing-subscriber` layer over the registry, installed for the whole
//! process, so it runs alone in a child process) watches requests of every
//! kind, a cold load, a hit, an error, the POST form and MCP.

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
