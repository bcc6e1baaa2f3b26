//! `tableq token`: prints a bearer token of the local issuer, for scripts, `curl` and
//! languages without an Entra ID client.
//!
//! ```text
//! tableq token --role contributor|reader [--principal ID] [--tenant T]
//!              [--endpoint https://HOST:PORT] [--keys DIR | --data DIR] [--lifetime 1h]
//! ```
//!
//! The token is signed with the signing key `tableq serve --tls …` keeps in its keys
//! directory (the server makes it on its first start with HTTPS; this command never
//! makes one). `--endpoint` is the server's HTTPS origin: the token's issuer is
//! `{endpoint}/{tenant}/v2.0`, which that server accepts. Without it, the origin the server
//! wrote into the keys directory at its start (`local-issuer-origin`) is used, so the token
//! names the issuer the running server trusts. Exit codes: 0 printed, 2 no
//! usable key or a bad flag.

use clap::Args as ClapArgs;
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;
use tableq_server::token::{
    ISSUER_ORIGIN_FILE, LocalIssuer, Role, SIGNING_KEY_FILE, STORAGE_AUDIENCE, TokenRequest,
};

/// Arguments of `tableq token`.
#[derive(Debug, Clone, ClapArgs)]
pub struct Args {
    /// The table role the token carries (its `roles` claim): `reader` (Storage Table Data
    /// Reader) or `contributor` (Storage Table Data Contributor).
    #[arg(long, value_name = "ROLE", value_parser = ["reader", "contributor"])]
    role: String,
    /// The principal (`oid` and `sub`).
    #[arg(long, value_name = "ID", default_value = "tableq-cli")]
    principal: String,
    /// The tenant (`tid`).
    #[arg(
        long,
        value_name = "TENANT",
        default_value = "00000000-0000-0000-0000-000000000000"
    )]
    tenant: String,
    /// The HTTPS origin of the server that will receive the token [default: the origin
    /// the server running the local issuer wrote into the keys directory
    /// (`local-issuer-origin`), else https://127.0.0.1:10002].
    #[arg(long, value_name = "URL")]
    endpoint: Option<String>,
    /// The keys directory of the server [default: DATA/keys].
    #[arg(long, value_name = "DIR")]
    keys: Option<PathBuf>,
    /// The server's data directory (its `keys` directory holds the signing key).
    #[arg(long, value_name = "DIR", default_value = "./tableq-data")]
    data: PathBuf,
    /// How long the token is valid (e.g. `1h`, `10min`).
    #[arg(long, value_name = "DURATION", default_value = "1h", value_parser = humantime::parse_duration)]
    lifetime: Duration,
    /// The audience (`aud`).
    #[arg(long, value_name = "URL", default_value = STORAGE_AUDIENCE)]
    audience: String,
}

/// Prints the token.
pub fn run(args: Args) -> ExitCode {
    let keys = args.keys.clone().unwrap_or_else(|| args.data.join("keys"));
    if !keys.join(SIGNING_KEY_FILE).is_file() {
        eprintln!(
            "error: no signing key in {}: start `tableq serve --tls self-signed` (with the same \
             --data or --keys) once, it makes the key",
            keys.display()
        );
        return ExitCode::from(2);
    }
    let issuer = match LocalIssuer::open(&keys) {
        Ok(i) => i,
        Err(e) => {
            eprintln!("error: {e}");
            return ExitCode::from(2);
        }
    };
    let written = std::fs::read_to_string(keys.join(ISSUER_ORIGIN_FILE)).ok();
    let endpoint = args
        .endpoint
        .as_deref()
        .or_else(|| written.as_deref().map(str::trim).filter(|o| !o.is_empty()))
        .unwrap_or("https://127.0.0.1:10002")
        .trim_end_matches('/');
    if !endpoint.starts_with("https://") {
        eprintln!("error: --endpoint {endpoint}: want the server's https:// origin");
        return ExitCode::from(2);
    }
    let request = TokenRequest {
        origin: endpoint.to_owned(),
        tenant: args.tenant,
        principal: args.principal,
        role: Role::parse(&args.role),
        audience: args.audience,
        lifetime_seconds: args.lifetime.as_secs().max(1),
    };
    match issuer.issue(&request) {
        Ok(token) => {
            use std::io::Write;
            let mut out = std::io::stdout().lock();
            let _ = writeln!(out, "{token}");
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("error: {e}");
            ExitCode::from(2)
        }
    }
}
