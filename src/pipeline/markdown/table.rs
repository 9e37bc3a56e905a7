//! A `TABLE` element as a GFM table: the first row is the header, short
//! rows are padded, and each cell is one line of escaped text (its `value`,
//! else the plain text of its rich text; a newline becomes a space, since a
//! GFM cell holds one line and no HTML).

use super::out::{Flow, Out};
use super::value::V;

pub fn table(out: &mut Out, table: &V) {
    let rows = table.list("rows");
    let columns = rows.iter().map(|r| r.items().len()).max().unwrap_or(0);
    if columns == 0 {
        return;
    }
    out.begin_block();
    for (i, row) in rows.iter().enumerate() {
        out.end_line();
        for column in 0..columns {
            out.markup(if column == 0 { "| " } else { " | " });
            if let Some(cell) = row.items().get(column) {
                cell_text(out, cell);
            }
        }
        out.markup(" |");
        if i == 0 {
            out.end_line();
            for column in 0..columns {
                out.markup(if column == 0 { "| --- |" } else { " --- |" });
            }
        }
    }
    out.end_block();
}

fn cell_text(out: &mut Out, cell: &V) {
    match cell.get("value") {
        Some(V::Str(s)) if !s.is_empty() => out.text(s, Flow::OneLine),
        Some(V::Num(n)) => out.text(&n.to_string(), Flow::OneLine),
        Some(V::Bool(b)) => out.text(if *b { "true" } else { "false" }, Flow::OneLine),
        _ => {
            if let Some(plain) = cell.get("richText").and_then(|r| r.str("plainText")) {
                out.text(plain, Flow::OneLine);
            }
        }
    }
}
