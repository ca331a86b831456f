//! Long lists of fixed-height rows, rendered a window at a time: a 100,000-line log or a fleet of ten thousand
//! services puts only the rows in view (and a margin) into the DOM, so opening, filtering and scrolling cost
//! the same at any length.

use std::ops::Range;

/// The rows to put in the DOM for a list of fixed-height rows: those in view, plus `overscan` on either
/// side. Empty when there are no rows; nonsense sizes (negative, NaN, zero row height) are treated as 0 or
/// as one row.
pub fn visible_window(
    scroll_top: f64,
    viewport: f64,
    row_height: f64,
    rows: usize,
    overscan: usize,
) -> Range<usize> {
    if rows == 0 {
        return 0..0;
    }
    let row_height = if row_height.is_finite() && row_height > 0.0 {
        row_height
    } else {
        1.0
    };
    let scroll_top = finite_non_negative(scroll_top);
    let viewport = finite_non_negative(viewport);
    let first = ((scroll_top / row_height).floor() as usize).min(rows - 1);
    let last = (((scroll_top + viewport) / row_height).ceil() as usize).clamp(first + 1, rows);
    first.saturating_sub(overscan)..last.saturating_add(overscan).min(rows)
}

pub(crate) fn finite_non_negative(value: f64) -> f64 {
    if value.is_finite() {
        value.max(0.0)
    } else {
        0.0
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn the_window_covers_the_viewport_and_its_overscan_and_stays_in_bounds() {
        // 20 px rows, a 200 px viewport: 10 rows in view.
        assert_eq!(visible_window(0.0, 200.0, 20.0, 1000, 5), 0..15);
        assert_eq!(visible_window(210.0, 200.0, 20.0, 1000, 5), 5..26);
        assert_eq!(visible_window(19_800.0, 200.0, 20.0, 1000, 5), 985..1000);
        // Scrolled past the end (the log shrank): the last rows, not an empty window.
        assert_eq!(visible_window(1e9, 200.0, 20.0, 1000, 0), 999..1000);
        assert_eq!(visible_window(0.0, 200.0, 20.0, 3, 5), 0..3);
        assert_eq!(visible_window(0.0, 200.0, 20.0, 0, 5), 0..0);
        assert_eq!(visible_window(-50.0, 0.0, 20.0, 10, 0), 0..1);
        assert_eq!(visible_window(f64::NAN, f64::INFINITY, 0.0, 10, 0), 0..1);
        assert_eq!(visible_window(0.0, 200.0, 20.0, 1000, usize::MAX), 0..1000);
    }

    proptest! {
        #[test]
        fn the_window_is_always_inside_the_rows(
            scroll in -1e6f64..1e7,
            viewport in -10f64..5000.0,
            row in -1f64..100.0,
            rows in 0usize..100_000,
            overscan in 0usize..50,
        ) {
            let w = visible_window(scroll, viewport, row, rows, overscan);
            prop_assert!(w.start <= w.end && w.end <= rows);
            prop_assert_eq!(w.is_empty(), rows == 0);
        }
    }
}
