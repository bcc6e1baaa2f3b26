//! The table explorer (`/_explorer/`, issue 21) in a real browser
//! (`tests/browser/test/explorer.test.mjs`, run by [`browser_support`]): sign in with the
//! development key, create a table, import JSON lines, filter with a typo and see the
//! caret, fix it and see the plan, the rows and the executor's statistics, page forward,
//! edit an entity, provoke an ETag conflict — with no script error or CSP violation; and
//! the page a read-only SAS token gets offers no New entity and no Import.
//!
//! `TABLEQ_EXPLORER_SCREENSHOTS=DIR cargo test --test clients browser_explorer::` also saves the
//! screenshots of the main pages (the images in `docs/`).

use crate::browser_support;

#[test]
fn the_explorer_works_in_a_browser() {
    browser_support::run_browser_test("test/explorer.test.mjs", 2, "browser_explorer");
}
