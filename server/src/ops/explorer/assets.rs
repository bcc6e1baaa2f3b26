//! The explorer's files, embedded in the binary at build time from `server/explorer/`
//! (`include_bytes!`: nothing is read from disk or fetched at run time), each with its
//! content type and an entity tag derived from its bytes.
//!
//! Every file of `server/explorer/` must be listed here (a test checks both directions), so
//! a page never asks for a module the binary does not hold.
//!
//! ```text
//! find("js/api.js") → Asset { content_type: "text/javascript; charset=utf-8", etag: "\"3f2a…\"", … }
//! ```

use sha2::{Digest, Sha256};
use std::sync::OnceLock;

/// One embedded file.
pub(crate) struct Asset {
    /// Its path under `/_explorer/`.
    pub path: &'static str,
    /// Its `Content-Type`.
    pub content_type: &'static str,
    /// Its bytes.
    pub body: &'static [u8],
    etag: OnceLock<String>,
}

impl Asset {
    const fn new(path: &'static str, body: &'static [u8]) -> Asset {
        Asset {
            path,
            content_type: content_type(path),
            body,
            etag: OnceLock::new(),
        }
    }

    /// A strong entity tag: the first 128 bits of the SHA-256 of the bytes, in hex, quoted.
    pub fn etag(&self) -> &str {
        self.etag.get_or_init(|| {
            let digest = Sha256::digest(self.body);
            let hex: String = digest[..16].iter().map(|b| format!("{b:02x}")).collect();
            format!("\"{hex}\"")
        })
    }
}

/// The content type of a file, by its extension.
const fn content_type(path: &str) -> &'static str {
    let bytes = path.as_bytes();
    if ends_with(bytes, b".html") {
        "text/html; charset=utf-8"
    } else if ends_with(bytes, b".css") {
        "text/css; charset=utf-8"
    } else if ends_with(bytes, b".js") {
        "text/javascript; charset=utf-8"
    } else if ends_with(bytes, b".svg") {
        "image/svg+xml"
    } else {
        "application/octet-stream"
    }
}

const fn ends_with(text: &[u8], suffix: &[u8]) -> bool {
    if suffix.len() > text.len() {
        return false;
    }
    let offset = text.len() - suffix.len();
    let mut i = 0;
    while i < suffix.len() {
        if text[offset + i] != suffix[i] {
            return false;
        }
        i += 1;
    }
    true
}

macro_rules! assets {
    ($($path:literal),* $(,)?) => {
        [$(Asset::new($path, include_bytes!(concat!("../../../explorer/", $path)))),*]
    };
}

/// Every file of the explorer.
static ASSETS: [Asset; 15] = assets![
    "index.html",
    "explorer.css",
    "favicon.svg",
    "js/main.js",
    "js/dom.js",
    "js/credentials.js",
    "js/api.js",
    "js/edm.js",
    "js/batch.js",
    "js/tables.js",
    "js/table.js",
    "js/query.js",
    "js/grid.js",
    "js/editor.js",
    "js/transfer.js",
];

/// The asset at `path` (relative to `/_explorer/`), if there is one.
pub(crate) fn find(path: &str) -> Option<&'static Asset> {
    ASSETS.iter().find(|a| a.path == path)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::BTreeSet;
    use std::path::Path;

    fn files_under(dir: &Path, prefix: &str, out: &mut BTreeSet<String>) {
        for entry in std::fs::read_dir(dir).unwrap() {
            let entry = entry.unwrap();
            let name = entry.file_name().into_string().unwrap();
            let path = format!("{prefix}{name}");
            if entry.file_type().unwrap().is_dir() {
                files_under(&entry.path(), &format!("{path}/"), out);
            } else {
                out.insert(path);
            }
        }
    }

    #[test]
    fn every_file_of_the_directory_is_embedded_and_nothing_else() {
        let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("explorer");
        let mut on_disk = BTreeSet::new();
        files_under(&dir, "", &mut on_disk);
        let embedded: BTreeSet<String> = ASSETS.iter().map(|a| a.path.to_owned()).collect();
        assert_eq!(on_disk, embedded);
        for asset in &ASSETS {
            assert_ne!(
                asset.content_type, "application/octet-stream",
                "{}",
                asset.path
            );
            assert!(!asset.body.is_empty(), "{}", asset.path);
        }
    }

    #[test]
    fn etags_follow_the_bytes() {
        let index = find("index.html").unwrap();
        let api = find("js/api.js").unwrap();
        assert_eq!(index.etag().len(), 34);
        assert_ne!(index.etag(), api.etag());
        assert_eq!(index.etag(), find("index.html").unwrap().etag());
        assert!(find("../Cargo.toml").is_none() && find("").is_none());
        assert_eq!(content_type("a/b.js"), "text/javascript; charset=utf-8");
        assert_eq!(content_type("x.css"), "text/css; charset=utf-8");
        assert_eq!(content_type("js"), "application/octet-stream");
    }
}
