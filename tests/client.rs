//! `tableq serve`'s banner as a client reads it: a child process on a free loopback port,
//! the connection string it prints for every account used by `tableq-client`. (The
//! client's own tests, against the server library in-process, live in `client/tests/`.)

use crate::serve_support;

use serve_support::Serve;
use tableq_client::TableServiceClient;

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap()
}

#[test]
fn the_banner_prints_a_working_connection_string_for_every_account() {
    let key = "c2Vjb25kIGFjY291bnQga2V5";
    let serve = Serve::start(&["--in-memory", "--account", &format!("second:{key}")]);
    let banner = serve.banner(5);
    let find = |prefix: &str| {
        banner
            .iter()
            .find_map(|l| l.strip_prefix(prefix).map(str::to_owned))
            .unwrap_or_else(|| panic!("no {prefix:?} in {banner:#?}"))
    };
    let dev = find("connection string: ");
    let second = find("connection string (second): ");
    assert!(
        second.contains(&format!("AccountName=second;AccountKey={key};")),
        "{second}"
    );
    runtime().block_on(async {
        let second = TableServiceClient::from_connection_string(&second).unwrap();
        assert_eq!(second.account(), "second");
        second.create_table("OnlyHere").await.unwrap();
        let dev = TableServiceClient::from_connection_string(&dev).unwrap();
        assert!(
            dev.list_tables().await.unwrap().is_empty(),
            "accounts are separate"
        );
        assert_eq!(second.list_tables().await.unwrap(), ["OnlyHere"]);
    });
}
