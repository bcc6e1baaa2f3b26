//! The accounts a server hosts ([`Hosted`]): each account's key (with the memo of the
//! strings to sign it verified, [`MacMemo`]) and its state ([`AppState`]: store,
//! configuration, cached CORS rules), the secondary endpoint's name
//! ([`SECONDARY_SUFFIX`]), and the bearer-token setup ([`BearerSetup`]).
//!
//! Shared state, the floor of the crate: authorization picks a request's account here,
//! handlers read its store and configuration here. It imports nothing of the crate but
//! the other shared state.

use axum::http::request::Parts;
use std::sync::{Arc, PoisonError, RwLock};
use tableq_client::sign::AccountKey;
use tableq_store::{Backend, CorsRule};

use crate::state::config::{Account, AuthMode, ServerConfig};
use crate::state::faults::Faults;
use crate::state::key_memo::MacMemo;
use crate::state::token::Bearer;

/// The suffix of an account's secondary (read-only) endpoint name.
pub const SECONDARY_SUFFIX: &str = "-secondary";

/// One hosted account: its key (with the memo of the SAS strings to sign it verified) and
/// its state (store + configuration).
pub(crate) struct HostedAccount {
    /// The account key, with the memo of the strings to sign it verified.
    pub(crate) key: MacMemo,
    /// The account's store and configuration.
    pub(crate) state: Arc<AppState>,
}

/// The accounts a server hosts (the first is the configuration's account) and whether
/// requests must be signed.
pub(crate) struct Hosted {
    accounts: Vec<HostedAccount>,
    /// Whether requests must be signed.
    pub(crate) mode: AuthMode,
    bearer: Option<Arc<BearerSetup>>,
    /// The throttle and the fault rules, shared by every account.
    faults: Arc<Faults>,
}

impl Hosted {
    /// The configuration's account, served from `backend`.
    pub(crate) fn new(backend: Arc<dyn Backend>, config: ServerConfig) -> Result<Hosted, String> {
        let key = AccountKey::new(&config.account.name, &config.account.key)
            .map_err(|e| e.to_string())?;
        let mode = config.auth;
        Ok(Hosted {
            accounts: vec![HostedAccount {
                key: MacMemo::new(key),
                state: Arc::new(AppState::new(backend, config)),
            }],
            mode,
            bearer: None,
            faults: Arc::new(Faults::default()),
        })
    }

    /// Adds an account with its own store (same limits as the first account).
    pub(crate) fn add(
        &mut self,
        account: Account,
        backend: Arc<dyn Backend>,
    ) -> Result<(), String> {
        let key = AccountKey::new(&account.name, &account.key).map_err(|e| e.to_string())?;
        if self.find(&account.name).is_some() {
            return Err(format!("account {:?} is already hosted", account.name));
        }
        let config = ServerConfig {
            account,
            ..self.primary().config.clone()
        };
        self.accounts.push(HostedAccount {
            key: MacMemo::new(key),
            state: Arc::new(AppState::new(backend, config)),
        });
        Ok(())
    }

    /// Accepts bearer tokens as `setup` says (over HTTPS).
    pub(crate) fn set_bearer(&mut self, setup: BearerSetup) {
        self.bearer = Some(Arc::new(setup));
    }

    /// Throttles and injects faults as `faults` says.
    pub(crate) fn set_faults(&mut self, faults: Faults) {
        self.faults = Arc::new(faults);
    }

    /// The throttle and the fault rules.
    pub(crate) fn faults(&self) -> &Arc<Faults> {
        &self.faults
    }

    /// The bearer-token setup, if tokens are accepted.
    pub(crate) fn bearer(&self) -> Option<&Arc<BearerSetup>> {
        self.bearer.as_ref()
    }

    /// The first account's state.
    pub(crate) fn primary(&self) -> &Arc<AppState> {
        // `new` creates the first account and nothing removes accounts.
        &self.accounts[0].state
    }

    /// Every account's state, the first first.
    pub(crate) fn states(&self) -> impl Iterator<Item = &Arc<AppState>> {
        self.accounts.iter().map(|a| &a.state)
    }

    /// The names of the hosted accounts.
    pub(crate) fn names(&self) -> Vec<String> {
        self.accounts
            .iter()
            .map(|a| a.key.key().name().to_owned())
            .collect()
    }

    fn find(&self, name: &str) -> Option<&HostedAccount> {
        self.accounts.iter().find(|a| a.key.key().name() == name)
    }

    /// The state of the account a path names (`{account}` or `{account}-secondary`), and
    /// whether it names the secondary endpoint.
    pub(crate) fn account(&self, name: &str) -> Option<(&HostedAccount, bool)> {
        if let Some(a) = self.find(name) {
            return Some((a, false));
        }
        let base = name.strip_suffix(SECONDARY_SUFFIX)?;
        self.find(base).map(|a| (a, true))
    }

    /// The state of the account a path names (`{account}` or `{account}-secondary`).
    pub(crate) fn state(&self, name: &str) -> Option<&Arc<AppState>> {
        self.account(name).map(|(a, _)| &a.state)
    }
}

/// State shared by every request of one account.
pub(crate) struct AppState {
    /// The store.
    pub backend: Arc<dyn Backend>,
    /// The configuration.
    pub config: ServerConfig,
    /// The account's CORS rules as last read from (or written to) the store.
    pub cors: CorsCache,
    /// Serialises Set Service Properties (a read-modify-write of the stored value).
    pub settings: tokio::sync::Mutex<()>,
}

impl AppState {
    /// The state of an account served from `backend`.
    pub(crate) fn new(backend: Arc<dyn Backend>, config: ServerConfig) -> AppState {
        AppState {
            backend,
            config,
            cors: CorsCache::default(),
            settings: tokio::sync::Mutex::new(()),
        }
    }
}

/// One account's CORS rules as last read from or written to its store.
#[derive(Default)]
pub(crate) struct CorsCache {
    rules: RwLock<Option<Arc<Vec<CorsRule>>>>,
}

impl CorsCache {
    /// Replaces the cached rules (after a Set Service Properties stored them).
    pub(crate) fn set(&self, rules: Vec<CorsRule>) {
        *self.rules.write().unwrap_or_else(PoisonError::into_inner) = Some(Arc::new(rules));
    }

    /// The cached rules, if read or written already.
    pub(crate) fn cached(&self) -> Option<Arc<Vec<CorsRule>>> {
        self.rules
            .read()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }
}

impl CorsCache {
    /// The cached rules, or `rules` (just read from the store) when none are cached yet: a
    /// Set that stored rules meanwhile wins over what was read before it.
    pub(crate) fn get_or_insert(&self, rules: Arc<Vec<CorsRule>>) -> Arc<Vec<CorsRule>> {
        let mut slot = self.rules.write().unwrap_or_else(PoisonError::into_inner);
        slot.get_or_insert(rules).clone()
    }
}

/// The bearer-token setup of a server: issuers, assignments, and the HTTPS origins clients
/// may name it by (for `iss` of the local issuer and `aud`), the first the one it names
/// itself by.
#[derive(Debug)]
pub(crate) struct BearerSetup {
    pub(crate) bearer: Bearer,
    pub(crate) origins: Vec<String>,
}

impl BearerSetup {
    /// The server's HTTPS origin a request reached: the configured origin its `Host` names,
    /// else the first configured one. A `Host` that is not one of the server's own is never
    /// echoed (in a discovery document, a token or a hint).
    pub(crate) fn origin_for(&self, parts: &Parts) -> &str {
        let host = parts
            .headers
            .get(axum::http::header::HOST)
            .and_then(|h| h.to_str().ok())
            .map(str::to_ascii_lowercase);
        host.and_then(|h| {
            self.origins
                .iter()
                .find(|o| o.strip_prefix("https://") == Some(h.as_str()))
        })
        .or(self.origins.first())
        .map_or("https://127.0.0.1", String::as_str)
    }
}
