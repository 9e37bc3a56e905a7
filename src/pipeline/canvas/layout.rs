//! Where the nodes of a JSON Canvas export go, in pixels: the board's grid
//! units scaled by [`UNIT`], default sizes for elements that store none,
//! heights estimated from the text a node shows, and a last pass that moves
//! a node down until it overlaps no other. Called by the canvas writer
//! (`super`).

/// Pixels per grid unit at 100 %: the web app draws a default card or
/// column, 34 units wide, 304 px wide. The playground's canvas draws boards
/// with the same factor.
pub const UNIT: f64 = 304.0 / 34.0;

/// Space around the nodes inside a column's group, and between them.
pub const GROUP_PAD: f64 = 20.0;

/// Height of the label canvas apps draw above a group's box.
pub const LABEL: f64 = 32.0;

/// Space kept between two nodes the last pass had to move apart.
const GAP: f64 = 20.0;

/// Width in grid units of an element that stores none: the web app's
/// defaults (a card or a column is 34 units).
pub fn default_width(kind: &str) -> f64 {
    match kind {
        "CARD" | "COLUMN" | "TASK_LIST" | "TASK" | "IMAGE" | "LINK" => 34.0,
        "FILE" | "ANNOTATION" => 26.0,
        "BOARD" => 14.0,
        "COMMENT_THREAD" | "SKETCH" => 30.0,
        "DOCUMENT" | "UNKNOWN" => 24.0,
        "COLOR_SWATCH" => 16.0,
        "SKELETON" => 18.0,
        "TABLE" => 50.0,
        _ => 24.0,
    }
}

/// A width or height in grid units as the board stored it: a positive
/// number within reason (a string such as `"auto"` is none).
pub fn stored_units(value: Option<&serde_json::Value>) -> Option<f64> {
    let n = value?.as_f64()?;
    (n > 0.0 && n < 4000.0).then_some(n)
}

/// The height a text node needs to show `markdown` at `width` px without
/// scrolling, about: Obsidian's canvas writes 16 px text on 24 px lines, at
/// about 8 px a character; headings take more, an image its own height.
pub fn text_height(markdown: &str, width: f64, image: Option<f64>) -> f64 {
    let per_line = ((width - 32.0) / 8.0).max(8.0);
    let mut height = 32.0;
    for line in markdown.lines() {
        let chars = line.chars().count() as f64;
        let rows = (chars / per_line).ceil().max(1.0);
        height += if line.trim().is_empty() {
            8.0
        } else if line.starts_with('#') {
            rows * 36.0
        } else if line.starts_with("![") {
            image.unwrap_or(width * 0.66)
        } else {
            rows * 24.0
        };
    }
    height.clamp(56.0, 4000.0)
}

/// A rectangle in pixels.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Rect {
    pub x: f64,
    pub y: f64,
    pub w: f64,
    pub h: f64,
}

impl Rect {
    /// Whether the two share any area (touching edges do not count).
    pub fn overlaps(&self, other: &Rect) -> bool {
        self.x < other.x + other.w
            && other.x < self.x + self.w
            && self.y < other.y + other.h
            && other.y < self.y + self.h
    }

    fn shares_columns(&self, other: &Rect) -> bool {
        self.x < other.x + other.w && other.x < self.x + self.w
    }

    fn bottom(&self) -> f64 {
        self.y + self.h
    }
}

/// How far down each of `rects` must move so that no two overlap: taken in
/// reading order (top to bottom, then left to right), a rectangle that
/// overlaps one already settled goes below it; when that still overlaps,
/// below every settled one in its columns. Three scans at most per
/// rectangle, of the settled ones that reach below its top: quadratic in
/// the count at worst (a pile at one place), near linear for rows.
pub fn settle(rects: &[Rect]) -> Vec<f64> {
    let mut order: Vec<usize> = (0..rects.len()).collect();
    order.sort_by(|&a, &b| {
        let (a, b) = (&rects[a], &rects[b]);
        a.y.total_cmp(&b.y).then(a.x.total_cmp(&b.x))
    });
    let mut settled: Vec<Rect> = Vec::with_capacity(rects.len());
    let mut moved = vec![0.0; rects.len()];
    for i in order {
        let mut rect = rects[i];
        // Rectangles come in order of `y` and only move down: a settled one
        // that ends above this one's top can overlap no later one either.
        settled.retain(|s| s.bottom() > rect.y);
        for _ in 0..2 {
            let below = settled
                .iter()
                .filter(|s| s.overlaps(&rect))
                .map(Rect::bottom)
                .fold(f64::NAN, f64::max);
            if below.is_nan() {
                break;
            }
            rect.y = below + GAP;
        }
        if settled.iter().any(|s| s.overlaps(&rect)) {
            let floor = settled
                .iter()
                .filter(|s| s.shares_columns(&rect))
                .map(Rect::bottom)
                .fold(rect.y, f64::max);
            rect.y = floor + GAP;
        }
        moved[i] = rect.y - rects[i].y;
        settled.push(rect);
    }
    moved
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rect(x: f64, y: f64, w: f64, h: f64) -> Rect {
        Rect { x, y, w, h }
    }

    #[test]
    fn settled_rectangles_never_overlap() {
        let cases: Vec<Vec<Rect>> = vec![
            vec![rect(0.0, 0.0, 100.0, 100.0), rect(50.0, 50.0, 100.0, 100.0)],
            (0..40).map(|_| rect(0.0, 0.0, 80.0, 60.0)).collect(),
            (0..30)
                .map(|i| rect((i % 5) as f64 * 70.0, (i / 5) as f64 * 50.0, 100.0, 90.0))
                .collect(),
            vec![
                rect(0.0, 0.0, 300.0, 50.0),
                rect(0.0, 60.0, 100.0, 50.0),
                rect(200.0, 40.0, 100.0, 50.0),
            ],
        ];
        for rects in cases {
            let moved = settle(&rects);
            let placed: Vec<Rect> = rects
                .iter()
                .zip(&moved)
                .map(|(r, dy)| Rect { y: r.y + dy, ..*r })
                .collect();
            for (i, a) in placed.iter().enumerate() {
                assert!(moved[i] >= 0.0);
                for b in &placed[i + 1..] {
                    assert!(!a.overlaps(b), "{a:?} {b:?}");
                }
            }
        }
    }

    #[test]
    fn rectangles_apart_stay_where_they_are() {
        let rects = [rect(0.0, 0.0, 100.0, 100.0), rect(100.0, 0.0, 50.0, 50.0)];
        assert_eq!(settle(&rects), vec![0.0, 0.0]);
    }

    #[test]
    fn heights_grow_with_the_text() {
        let short = text_height("Hello", 300.0, None);
        let long = text_height(&"word ".repeat(200), 300.0, None);
        let image = text_height("![a](https://x.test/a.png)", 300.0, Some(400.0));
        assert!(short >= 56.0 && long > short * 4.0 && image > 400.0);
    }
}
