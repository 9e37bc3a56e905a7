//! [`Changes`] as GitHub Flavored Markdown, for `/changes` with
//! `Accept: text/markdown` and the MCP `board_changes` tool: a heading, the
//! two versions, then a section per kind of change with a line per element
//! (its title, type and the last steps of the path of titles to it: at
//! most [`PATH_STEPS`], so a line's length does not grow with the board's
//! depth; what changed or where it went). Board text is escaped as in every Markdown render
//! ([`crate::pipeline::markdown`]): it never becomes structure.

use super::{Changes, Entry, Place};
use crate::pipeline::markdown::out::{Flow, Out, Sep};

/// The steps of a path a line shows: the nearest ones, after `…` when
/// there are more.
pub const PATH_STEPS: usize = 3;

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
    let counts = &changes.counts;
    for (heading, list, count) in [
        ("Added", &changes.added, counts.added),
        ("Removed", &changes.removed, counts.removed),
        ("Changed", &changes.changed, counts.changed),
        ("Moved", &changes.moved, counts.moved),
    ] {
        if list.is_empty() {
            continue;
        }
        let count = count.max(list.len());
        out.begin_block();
        if count > list.len() {
            out.markup(&format!(
                "## {heading} ({count}, the first {} listed)",
                list.len()
            ));
        } else {
            out.markup(&format!("## {heading} ({count})"));
        }
        out.end_block();
        out.begin_block();
        out.within("", Sep::Line, |out| {
            for entry in list {
                line(out, entry, &changes.path(entry));
            }
        });
        out.end_block();
    }
    out.finish()
}

/// `- **title** (TYPE) in Root › Column: fields` or `: from … to …`.
fn line(out: &mut Out, entry: &Entry, path: &[&str]) {
    out.begin_block();
    out.marker("- ");
    out.markup("**");
    out.text(&entry.title, Flow::OneLine);
    out.markup("** (");
    out.text(&entry.kind, Flow::OneLine);
    out.markup(")");
    if !path.is_empty() {
        out.markup(" in ");
        let shown = &path[path.len().saturating_sub(PATH_STEPS)..];
        if shown.len() < path.len() {
            out.markup("… › ");
        }
        for (i, step) in shown.iter().enumerate() {
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

    use crate::pipeline::changes::Parent;

    fn parent(id: &str, title: &str, up: Option<&str>) -> Parent {
        Parent {
            id: id.into(),
            kind: "BOARD".into(),
            title: title.into(),
            parent_id: up.map(str::to_owned),
        }
    }

    #[test]
    fn a_section_per_kind_and_board_text_stays_text() {
        let entry = |title: &str| Entry {
            id: "c1".into(),
            kind: "CARD".into(),
            title: title.into(),
            parent_id: Some("col".into()),
            fields: None,
            from: None,
            to: None,
        };
        let mut changes = Changes::none("b", "0".repeat(32).as_str(), true);
        changes.to = "1".repeat(32);
        changes.parents = vec![
            parent("b", "Root", None),
            parent("col", "# Col <b>", Some("b")),
        ];
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

    #[test]
    fn a_deep_path_shows_its_last_steps_and_a_cut_list_says_so() {
        let mut changes = Changes::none("b0", "0".repeat(32).as_str(), true);
        changes.to = "1".repeat(32);
        changes.parents.push(parent("b0", "Level 0", None));
        for depth in 1..30 {
            let (id, up) = (format!("b{depth}"), format!("b{}", depth - 1));
            changes
                .parents
                .push(parent(&id, &format!("Level {depth}"), Some(&up)));
        }
        changes.added.push(Entry {
            id: "deep".into(),
            kind: "CARD".into(),
            title: "Deep".into(),
            parent_id: Some("b29".into()),
            fields: None,
            from: None,
            to: None,
        });
        changes.counts.added = 5000;
        changes.truncated = true;
        let text = render(&changes, "Level 0");
        assert!(
            text.contains("## Added (5000, the first 1 listed)\n\n- **Deep** (CARD) in … › Level 27 › Level 28 › Level 29\n"),
            "{text}"
        );
        assert!(!text.contains("Level 26"), "{text}");
    }
}
