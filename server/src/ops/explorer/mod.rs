//! The table explorer: a browser UI for the data of this server, served under
//! `/_explorer/` (issue 21), and the `x-tableq-explain` extension of entity queries it uses.
//!
//! **What is served.** Plain HTML, CSS and ES modules from `server/explorer/`, embedded in
//! the binary at build time ([`assets`]; no CDN, no build step, nothing fetched from the
//! internet), plus `config.json` (the server's first account name and whether requests
//! must be signed). Every response carries a strict Content-Security-Policy (scripts and
//! styles from this origin only, no inline script, no framing, `connect-src 'self'`),
//! `X-Content-Type-Options: nosniff` and `Referrer-Policy: no-referrer`; static assets carry
//! an `ETag` (a hash of their bytes) with `Cache-Control: no-cache`, so a browser
//! revalidates them and gets `304 Not Modified` while the binary is the same.
//!
//! **Where it is routed.** [`crate::serve::observe::serve`] answers `/_explorer…` ([`asked`],
//! [`answer`]) before any account or authorization, like the operator endpoints (`/health`,
//! `/metrics`): the files are the same for everyone and hold no data; everything they show
//! comes from the REST API, signed by the page. The in-process [`crate::router`] serves
//! the Table protocol alone. The path cannot collide with an account: account names are
//! lower-case letters and digits. [`ServerConfig::explorer`](crate::ServerConfig::explorer)
//! (`tableq serve --no-explorer`) turns it off; `/_explorer/…` is then an ordinary request
//! for an account that does not exist (403/404 from the Table pipeline).
//!
//! **Access** (decided): the page talks to the same REST API as every client, from the same
//! origin, and signs its requests in the browser — SharedKeyLite with WebCrypto's
//! HMAC-SHA256 and an account key, or a SAS token appended to each URL — so it can never
//! reach more than REST allows. The key or token is kept in the tab's `sessionStorage`
//! only (gone when the tab closes; never sent to the server: only signatures are) and
//! imported as a non-extractable WebCrypto key. With authorization off (`--no-auth`) no
//! credential is asked for. The server adds no new credential type, cookie or session.
//!
//! **Explain** ([`explain`]): an entity query (`GET /{account}/{table}()`) that carries
//! `x-tableq-explain: plan` is answered with the query's plan (or the diagnostic of an
//! invalid option) instead of its rows; with `x-tableq-explain: analyze` it runs as usual
//! and its response adds `x-tableq-stats`, the executor's statistics of that page. Both go
//! through the whole authorization pipeline first, like the query itself.
//!
//! ```text
//! GET /_explorer            → 308 to /_explorer/
//! GET /_explorer/           → index.html            (ETag, CSP, nosniff)
//! GET /_explorer/js/api.js  → text/javascript        (304 with If-None-Match)
//! GET /_explorer/config.json → {"account":"devstoreaccount1","auth":"required",…}
//! ```

pub(crate) mod assets;
pub(crate) mod explain;

use axum::body::Body;
use axum::extract::Request;
use axum::http::{HeaderMap, HeaderValue, Method, StatusCode, header};
use axum::response::{IntoResponse, Response};

use crate::state::accounts::Hosted;
use crate::state::config::AuthMode;

/// The path the explorer is served under (with a trailing `/` for its index).
pub(crate) const PREFIX: &str = "/_explorer";

/// The Content-Security-Policy of every explorer response: nothing but this origin's own
/// scripts, styles and images, requests to this origin only, no framing, no forms.
pub(crate) const CONTENT_SECURITY_POLICY: &str = "default-src 'none'; script-src 'self'; \
     style-src 'self'; img-src 'self'; connect-src 'self'; base-uri 'none'; \
     form-action 'none'; frame-ancestors 'none'";

/// What a request under [`PREFIX`] asks for.
#[derive(Debug, PartialEq, Eq)]
enum Page {
    /// `/_explorer`: redirected to `/_explorer/`.
    Root,
    /// `/_explorer/config.json`.
    Config,
    /// `/_explorer/` (the index) or `/_explorer/{path}`: an embedded file.
    Asset(String),
}

/// The page a path names, if it is under [`PREFIX`].
fn page(path: &str) -> Option<Page> {
    let rest = path.strip_prefix(PREFIX)?;
    if rest.is_empty() {
        return Some(Page::Root);
    }
    let file = rest.strip_prefix('/')?;
    Some(match file {
        "" => Page::Asset("index.html".to_owned()),
        "config.json" => Page::Config,
        other => Page::Asset(other.to_owned()),
    })
}

/// A request for the explorer, as [`crate::serve::observe::serve`] recognises it (before any
/// account or authorization, like the operator endpoints: the files are public, and what
/// they show comes from the REST API, signed by the page).
pub(crate) struct Asked {
    page: Page,
    method: Method,
    headers: HeaderMap,
}

/// Whether `request` is for the explorer (always `None` when `hosted`'s configuration
/// turns it off: `/_explorer/…` is then an ordinary request for an account that does not
/// exist).
pub(crate) fn asked(hosted: &Hosted, request: &Request) -> Option<Asked> {
    if !hosted.primary().config.explorer {
        return None;
    }
    Some(Asked {
        page: page(request.uri().path())?,
        method: request.method().clone(),
        headers: request.headers().clone(),
    })
}

/// The response to a request for the explorer.
pub(crate) fn answer(hosted: &Hosted, asked: Asked) -> Response {
    let Asked {
        page,
        method,
        headers,
    } = asked;
    if method != Method::GET && method != Method::HEAD {
        let mut response = (
            StatusCode::METHOD_NOT_ALLOWED,
            format!("{method} is not supported here; use GET or HEAD\n"),
        )
            .into_response();
        response
            .headers_mut()
            .insert(header::ALLOW, HeaderValue::from_static("GET, HEAD"));
        return secure(response);
    }
    let mut response = match page {
        Page::Root => redirect(),
        Page::Config => {
            let config = &hosted.primary().config;
            secure(config_response(&config.account.name, config.auth))
        }
        Page::Asset(path) => serve_asset(&path, &headers),
    };
    if method == Method::HEAD {
        *response.body_mut() = Body::empty();
    }
    response
}

/// The headers every explorer response carries.
fn secure(mut response: Response) -> Response {
    let headers = response.headers_mut();
    for (name, value) in [
        ("content-security-policy", CONTENT_SECURITY_POLICY),
        ("x-content-type-options", "nosniff"),
        ("referrer-policy", "no-referrer"),
        ("x-frame-options", "DENY"),
        ("cross-origin-opener-policy", "same-origin"),
        ("cross-origin-resource-policy", "same-origin"),
    ] {
        headers.insert(name, HeaderValue::from_static(value));
    }
    response
}

/// `GET /_explorer`: the index lives at `/_explorer/` (relative module URLs need the `/`).
fn redirect() -> Response {
    secure(
        (
            StatusCode::PERMANENT_REDIRECT,
            [(header::LOCATION, HeaderValue::from_static("/_explorer/"))],
        )
            .into_response(),
    )
}

/// `config.json`: what the page needs before it can sign anything — the account it
/// proposes (the server's first; the user may name another), whether requests must be
/// signed, and the server's version. It names no other hosted account (as an unknown
/// account is never told them) and holds no key.
fn config_response(account: &str, auth: AuthMode) -> Response {
    let body = serde_json::json!({
        "account": account,
        "auth": match auth {
            AuthMode::Required => "required",
            AuthMode::Off => "off",
        },
        "version": env!("CARGO_PKG_VERSION"),
    })
    .to_string();
    (
        StatusCode::OK,
        [
            (
                header::CONTENT_TYPE,
                HeaderValue::from_static("application/json; charset=utf-8"),
            ),
            (header::CACHE_CONTROL, HeaderValue::from_static("no-store")),
        ],
        body,
    )
        .into_response()
}

/// An embedded asset with its `ETag` (or `304` when `If-None-Match` names it), or a 404.
fn serve_asset(path: &str, headers: &HeaderMap) -> Response {
    let Some(asset) = assets::find(path) else {
        return secure(
            (
                StatusCode::NOT_FOUND,
                [(
                    header::CONTENT_TYPE,
                    HeaderValue::from_static("text/plain; charset=utf-8"),
                )],
                format!("the explorer has no file `{path}`\n"),
            )
                .into_response(),
        );
    };
    let etag = asset.etag();
    let cache = [
        (header::ETAG, HeaderValue::from_str(etag).ok()),
        (
            header::CACHE_CONTROL,
            Some(HeaderValue::from_static("no-cache")),
        ),
    ];
    let mut response = if matches_etag(headers, etag) {
        StatusCode::NOT_MODIFIED.into_response()
    } else {
        let mut r = (StatusCode::OK, asset.body).into_response();
        r.headers_mut().insert(
            header::CONTENT_TYPE,
            HeaderValue::from_static(asset.content_type),
        );
        r
    };
    for (name, value) in cache {
        if let Some(value) = value {
            response.headers_mut().insert(name, value);
        }
    }
    secure(response)
}

/// Whether `If-None-Match` (a list of entity tags, or `*`) names `etag`. Weak comparison,
/// as RFC 9110 asks for `If-None-Match`.
fn matches_etag(headers: &HeaderMap, etag: &str) -> bool {
    let strip = |t: &str| t.trim().trim_start_matches("W/").to_owned();
    headers
        .get_all(header::IF_NONE_MATCH)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(','))
        .any(|t| t.trim() == "*" || strip(t) == strip(etag))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paths_under_the_prefix() {
        assert_eq!(page("/_explorer"), Some(Page::Root));
        assert_eq!(page("/_explorer/"), Some(Page::Asset("index.html".into())));
        assert_eq!(page("/_explorer/config.json"), Some(Page::Config));
        assert_eq!(
            page("/_explorer/js/api.js"),
            Some(Page::Asset("js/api.js".into()))
        );
        assert_eq!(page("/_explorerx"), None);
        assert_eq!(page("/devstoreaccount1/_explorer"), None);
        assert_eq!(page("/"), None);
    }

    #[test]
    fn if_none_match_lists_and_weak_tags() {
        let etag = "\"abc\"";
        let with = |v: &str| {
            let mut h = HeaderMap::new();
            h.insert(header::IF_NONE_MATCH, HeaderValue::from_str(v).unwrap());
            h
        };
        assert!(matches_etag(&with("\"abc\""), etag));
        assert!(matches_etag(&with("\"x\", W/\"abc\""), etag));
        assert!(matches_etag(&with("*"), etag));
        assert!(!matches_etag(&with("\"abd\""), etag));
        assert!(!matches_etag(&HeaderMap::new(), etag));
    }
}
