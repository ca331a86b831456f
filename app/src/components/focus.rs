//! Focus for keyboard users: where it goes when a dialog or panel opens and closes, and how Tab stays inside a
//! modal dialog.

use leptos::ev::KeyboardEvent;
use leptos::prelude::*;
use wasm_bindgen::JsCast as _;

/// Remembers the element focused now (the button that opens a dialog or panel) and returns a function that
/// focuses it again, for when the dialog or panel closes: removing a focused element drops focus on the page's
/// body, and a keyboard user would start again from the top.
pub fn remember_focus() -> impl Fn() + Copy + 'static {
    let opener = StoredValue::new_local(document().active_element());
    move || {
        // `try_`: the close event may arrive after the dialog that remembered this is gone.
        opener.try_with_value(|opener| {
            if let Some(opener) = opener
                .as_ref()
                .and_then(|o| o.dyn_ref::<web_sys::HtmlElement>())
            {
                let _ = opener.focus();
            }
        });
    }
}

/// What Tab can land on inside a dialog.
const FOCUSABLE: &str = "a[href], button:not([disabled]), input:not([disabled]), select:not([disabled]), \
    textarea:not([disabled]), [tabindex]:not([tabindex=\"-1\"])";

/// Wraps Tab and Shift+Tab around the dialog's first and last focusable elements. A modal `<dialog>` makes
/// the page behind it inert, but the browser still lets Tab leave for its own toolbar, which a keyboard user
/// then has to find the way back from.
pub fn keep_tab_inside(event: &KeyboardEvent) {
    if event.key() != "Tab" {
        return;
    }
    let Some(dialog) = event
        .current_target()
        .and_then(|t| t.dyn_into::<web_sys::Element>().ok())
    else {
        return;
    };
    // Every descendant in document order, kept when it matches: what Tab visits, give or take positive
    // tabindex values, which Tower does not use.
    let all = dialog.get_elements_by_tag_name("*");
    let focusable: Vec<web_sys::HtmlElement> = (0..all.length())
        .filter_map(|i| all.item(i))
        .filter(|element| element.matches(FOCUSABLE).unwrap_or(false))
        .filter_map(|element| element.dyn_into::<web_sys::HtmlElement>().ok())
        .collect();
    let (Some(first), Some(last)) = (focusable.first(), focusable.last()) else {
        return;
    };
    let active = document().active_element();
    let at = |element: &web_sys::HtmlElement| {
        active
            .as_ref()
            .is_some_and(|a| a == element.unchecked_ref::<web_sys::Element>())
    };
    let wrap_to = if event.shift_key() && at(first) {
        Some(last)
    } else if !event.shift_key() && at(last) {
        Some(first)
    } else {
        None
    };
    if let Some(target) = wrap_to {
        event.prevent_default();
        let _ = target.focus();
    }
}
