//! [`Changes`] as GitHub Flavored Markdown, for `/changes` with
//! `Accept: text/markdown` and the MCP `board_changes` tool: a heading, the
//! two versions, then a section per kind of change with a line per element
//! (its title, type and the path of titles to it; what changed or where it
//! went). Board text is escaped as in every Markdown render
//! ([`crate::pipeline::markdown`]): it never becomes structure.

use super::{Changes, Entry, Place};
use crate::pipeline::markdown::out::{Flow, Out, Sep};

/// The Markdown of `changes`; `title` is the board's title now.
pub fn render(changes: &Changes, title: &str) -> String {
    let entries =
        changes.added.len() + changes.removed.len() + changes.changed.len() + changes.moved.len();
    let mut out = Out::with_capacity(256 + entries * 96);
    out.begin_block();
    out.markup("# Changes to ");
    out.text(title, Flow::OneLine);
    out.end_block();
    out.begin_block();
    out.markup("From version ");
    out.code_span(&changes.from);
    out.markup(" to ");
    out.code_span(&changes.to);
    out.markup(if changes.is_empty() {
        ": nothing changed."
    } else {
        "."
    });
    if !changes.complete {
        out.markup(
            " Some nested boards were not loaded: their elements may show as added or removed.",
        );
    }
    out.end_block();
    for (heading, list) in [
        ("Added", &changes.added),
        ("Removed", &changes.removed),
        ("Changed", &changes.changed),
        ("Moved", &changes.moved),
    ] {
        if list.is_empty() {
            continue;
        }
        out.begin_block();
        out.markup(&format!("## {heading} ({})", list.len()));
        out.end_block();
        out.begin_block();
        out.within("", Sep::Line, |out| {
            for entry in list {
                line(out, entry);
            }
        });
        out.end_block();
    }
    out.finish()
}

/// `- **title** (TYPE) in Root › Column: fields` or `: from … to …`.
fn line(out: &mut Out, entry: &Entry) {
    out.begin_block();
    out.marker("- ");
    out.markup("**");
    out.text(&entry.title, Flow::OneLine);
    out.markup("** (");
    out.text(&entry.kind, Flow::OneLine);
    out.markup(")");
    if !entry.path.is_empty() {
        out.markup(" in ");
        for (i, step) in entry.path.iter().enumerate() {
            if i > 0 {
                out.markup(" › ");
            }
            out.text(step, Flow::OneLine);
        }
    }
    if let Some(fields) = &entry.fields {
        out.markup(": ");
        out.text(&fields.join(", "), Flow::OneLine);
    }
    if let (Some(from), Some(to)) = (&entry.from, &entry.to) {
        out.markup(": from ");
        place(out, from);
        out.markup(" to ");
        place(out, to);
    }
    out.end_block();
}

fn place(out: &mut Out, place: &Place) {
    match &place.parent_id {
        Some(id) => out.code_span(id),
        None => out.markup("the root"),
    }
    if let Some(section) = &place.section {
        out.markup(" (");
        out.text(section, Flow::OneLine);
        out.markup(")");
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_section_per_kind_and_board_text_stays_text() {
        let entry = |title: &str| Entry {
            id: "c1".into(),
            kind: "CARD".into(),
            title: title.into(),
            path: vec!["Root".into(), "# Col <b>".into()],
            fields: None,
            from: None,
            to: None,
        };
        let mut changes = Changes::none("b", "0".repeat(32).as_str(), true);
        changes.to = "1".repeat(32);
        changes.added.push(entry("*new* card"));
        let mut changed = entry("[x](javascript:alert(1))");
        changed.fields = Some(vec!["richText".into(), "position".into()]);
        changes.changed.push(changed);
        let text = render(&changes, "My <board>");
        assert!(
            text.starts_with("# Changes to My \\<board\\>\n\n"),
            "{text}"
        );
        assert!(
            text.contains(
                "## Added (1)\n\n- **\\*new\\* card** (CARD) in Root › \\# Col \\<b\\>\n"
            ),
            "{text}"
        );
        assert!(text.contains("## Changed (1)\n\n- **\\[x\\](javascript:alert(1))** (CARD) in Root › \\# Col \\<b\\>: richText, position\n"), "{text}");
        assert!(!text.contains("## Removed"), "{text}");
        let none = render(&Changes::none("b", &"0".repeat(32), true), "T");
        assert!(none.contains("nothing changed."), "{none}");
    }
}
