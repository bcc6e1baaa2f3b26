//! CORS from a real browser (`tests/browser/test/cors.test.mjs`, run by
//! [`browser_support`]): a page served from its own loopback origin calls tableq with
//! `fetch()`, and Chromium lets it see the answers exactly when the account's CORS rules
//! allow its origin. The page gets an account SAS built by the support module.

use crate::browser_support;

#[test]
fn a_browser_page_reaches_tableq_only_through_its_cors_rules() {
    browser_support::run_browser_test("test/cors.test.mjs", 1, "browser_cors");
}
