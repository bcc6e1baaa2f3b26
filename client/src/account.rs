//! Accounts as the SDKs and `tableq serve` name them: the development storage account
//! ([`DEV_ACCOUNT`], [`DEV_ACCOUNT_KEY`]), the default table port ([`DEFAULT_PORT`]) and
//! the connection string of an account at an endpoint ([`connection_string`]).

/// The development storage account's name.
pub const DEV_ACCOUNT: &str = "devstoreaccount1";
/// The development storage account's well-known key (public; see the data-model spec).
pub const DEV_ACCOUNT_KEY: &str =
    "Eby8vdM02xNOcqFlqUwJPLlmEtlCDXJ1OUzFT50uSRZ6IFsuFq2UVErCz4I6tq/K1SZFPTOtr/KBHBeksoGMGw==";
/// The development storage table port.
pub const DEFAULT_PORT: u16 = 10002;

/// The connection string of an account at a table endpoint, in the form the SDKs read
/// (and [`TableServiceClient::from_connection_string`](crate::TableServiceClient::from_connection_string) too):
/// `DefaultEndpointsProtocol=http;AccountName=…;AccountKey=…;TableEndpoint=…;`.
///
/// ```
/// let s = tableq_client::connection_string("http://127.0.0.1:10002/acct1", "acct1", "a2V5");
/// assert_eq!(s, "DefaultEndpointsProtocol=http;AccountName=acct1;AccountKey=a2V5;\
///                TableEndpoint=http://127.0.0.1:10002/acct1;");
/// ```
pub fn connection_string(table_endpoint: &str, account: &str, base64_key: &str) -> String {
    format!(
        "DefaultEndpointsProtocol=http;AccountName={account};AccountKey={base64_key};\
         TableEndpoint={table_endpoint};"
    )
}
