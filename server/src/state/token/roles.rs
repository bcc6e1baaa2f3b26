//! Role assignments (`--role-assignments FILE`): which principal has which table role,
//! where.
//!
//! The file is JSON: a list of assignments, or an object with the list under
//! `"assignments"` and a `"default"` for principals the list does not name — `"none"`, or
//! a role:
//!
//! ```json
//! {"default": "none",
//!  "assignments": [
//!    {"principalId": "app-1", "clientSecret": "s3cret-1", "role": "Storage Table Data Reader"},
//!    {"principalId": "app-2", "role": "Storage Table Data Contributor",
//!     "scope": "/subscriptions/s/resourceGroups/g/providers/Microsoft.Storage/storageAccounts/devstoreaccount1/tableServices/default/tables/orders"}]}
//! ```
//!
//! A `scope` is Azure's resource id of an account or a table (as above), or the short
//! forms `ACCOUNT` and `ACCOUNT/TABLE`; without one, the assignment covers every account.
//! A principal's role on a table is the highest role of its assignments that cover it.
//!
//! The file applies to the tokens of **every** trusted issuer, the local one and those of
//! `--trust-issuer` alike ([`RoleAssignments::decide`]): a principal the file assigns has
//! exactly the roles assigned (a token's `roles` claim does not add to them); a principal it
//! does not name has the `default` — `"none"` (no role, whatever its token claims) or a role
//! — and, when the file sets no default, the table roles its token's `roles` claim names.
//!
//! `clientSecret` registers the principal as a client of the local issuer
//! (`--local-issuer`): only registered clients whose secret matches get tokens there.

use serde::Deserialize;
use std::path::Path;

use super::error::TokenError;

/// An Azure RBAC built-in role for tables.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Role {
    /// Storage Table Data Reader: read tables and entities, query.
    Reader,
    /// Storage Table Data Contributor: also write entities, create and delete tables, batch.
    Contributor,
}

impl Role {
    /// The role's name in Azure (`Storage Table Data Reader` / `… Contributor`).
    pub fn azure_name(self) -> &'static str {
        match self {
            Role::Reader => "Storage Table Data Reader",
            Role::Contributor => "Storage Table Data Contributor",
        }
    }

    /// A role from its Azure name or the short names `reader` / `contributor`
    /// (case-insensitive).
    pub fn parse(text: &str) -> Option<Role> {
        let t = text.trim();
        [Role::Reader, Role::Contributor].into_iter().find(|r| {
            t.eq_ignore_ascii_case(r.azure_name())
                || t.eq_ignore_ascii_case(match r {
                    Role::Reader => "reader",
                    Role::Contributor => "contributor",
                })
        })
    }
}

/// Where an assignment applies.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Scope {
    /// Every account.
    All,
    /// One account.
    Account(String),
    /// One table of one account.
    Table(String, String),
}

impl Scope {
    /// A scope from Azure's resource id or the short forms (see the module docs).
    pub fn parse(text: &str) -> Option<Scope> {
        let parts: Vec<&str> = text.split('/').filter(|p| !p.is_empty()).collect();
        if parts.is_empty() {
            return Some(Scope::All);
        }
        let after = |name: &str| {
            parts
                .iter()
                .position(|p| p.eq_ignore_ascii_case(name))
                .and_then(|i| parts.get(i + 1))
                .map(|s| (*s).to_owned())
        };
        if parts
            .iter()
            .any(|p| p.eq_ignore_ascii_case("subscriptions"))
        {
            let account = after("storageAccounts")?;
            return Some(match after("tables") {
                Some(table) => Scope::Table(account, table),
                None => Scope::Account(account),
            });
        }
        match parts.as_slice() {
            [account] => Some(Scope::Account((*account).to_owned())),
            [account, table] => Some(Scope::Table((*account).to_owned(), (*table).to_owned())),
            _ => None,
        }
    }

    fn covers(&self, account: &str, table: Option<&str>) -> bool {
        match self {
            Scope::All => true,
            Scope::Account(a) => a == account,
            Scope::Table(a, t) => a == account && table.is_some_and(|x| x.eq_ignore_ascii_case(t)),
        }
    }
}

/// One assignment.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Assignment {
    principal: String,
    role: Role,
    scope: Scope,
}

/// The role of principals the file does not name.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
enum Unassigned {
    /// No `default` in the file (or no file): a token's `roles` claim decides; the local
    /// issuer issues Contributor.
    #[default]
    Claimed,
    /// `"default": "none"`: no role, whatever a token claims.
    Nothing,
    /// `"default": "<role>"`: that role.
    Role(Role),
}

/// The role assignments (see the module docs). The default (no file): nobody is
/// assigned anything, a token's `roles` claim decides, and the local issuer gives
/// Contributor.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct RoleAssignments {
    assignments: Vec<Assignment>,
    default: Unassigned,
    /// Registered clients of the local issuer: principal → secret.
    secrets: Vec<(String, String)>,
}

#[derive(Deserialize)]
#[serde(untagged)]
enum FileForm {
    List(Vec<Entry>),
    Object {
        #[serde(default)]
        default: Option<String>,
        #[serde(default)]
        assignments: Vec<Entry>,
    },
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct Entry {
    principal_id: String,
    role: String,
    #[serde(default)]
    scope: Option<String>,
    #[serde(default)]
    client_secret: Option<String>,
}

impl RoleAssignments {
    /// Reads an assignments file.
    pub fn from_file(path: &Path) -> Result<RoleAssignments, TokenError> {
        let text = std::fs::read_to_string(path).map_err(|e| TokenError::File {
            path: path.to_owned(),
            what: e.to_string(),
        })?;
        RoleAssignments::from_json(&text).map_err(|what| TokenError::File {
            path: path.to_owned(),
            what,
        })
    }

    /// Parses the file's JSON (see the module docs).
    pub fn from_json(text: &str) -> Result<RoleAssignments, String> {
        let form: FileForm = serde_json::from_str(text).map_err(|e| {
            format!(
                "not a role-assignment file ({e}): want [{{\"principalId\": \"…\", \"role\": \
                 \"Storage Table Data Reader\", \"clientSecret\": \"…\"}}, …] or \
                 {{\"default\": \"none\", \"assignments\": […]}}"
            )
        })?;
        let (default, entries) = match form {
            FileForm::List(entries) => (None, entries),
            FileForm::Object {
                default,
                assignments,
            } => (default, assignments),
        };
        let default = match default.as_deref() {
            None => Unassigned::Claimed,
            Some(d) if d.eq_ignore_ascii_case("none") => Unassigned::Nothing,
            Some(d) => Unassigned::Role(Role::parse(d).ok_or_else(|| {
                format!("`default`: `{d}` is not none, a table reader or a table contributor")
            })?),
        };
        let mut assignments = Vec::with_capacity(entries.len());
        let mut secrets: Vec<(String, String)> = Vec::new();
        for (i, e) in entries.into_iter().enumerate() {
            let role = Role::parse(&e.role).ok_or_else(|| {
                format!(
                    "assignment {i}: `{}` is not Storage Table Data Reader or Storage Table \
                     Data Contributor",
                    e.role
                )
            })?;
            let scope = match e.scope.as_deref() {
                None => Scope::All,
                Some(s) => Scope::parse(s).ok_or_else(|| {
                    format!(
                        "assignment {i}: scope `{s}` is not an account or table resource id \
                         (…/storageAccounts/ACCOUNT[/tableServices/default/tables/TABLE]) or \
                         ACCOUNT[/TABLE]"
                    )
                })?,
            };
            if let Some(secret) = e.client_secret {
                if secret.is_empty() {
                    return Err(format!(
                        "assignment {i}: `clientSecret` of `{}` is empty",
                        e.principal_id
                    ));
                }
                match secrets.iter().find(|(p, _)| *p == e.principal_id) {
                    Some((_, known)) if *known != secret => {
                        return Err(format!(
                            "assignment {i}: `{}` is given two different client secrets",
                            e.principal_id
                        ));
                    }
                    Some(_) => {}
                    None => secrets.push((e.principal_id.clone(), secret)),
                }
            }
            assignments.push(Assignment {
                principal: e.principal_id,
                role,
                scope,
            });
        }
        Ok(RoleAssignments {
            assignments,
            default,
            secrets,
        })
    }

    /// Registers one more client of the local issuer (the generated one) with the role
    /// `role` on every account.
    pub fn with_client(mut self, principal: &str, secret: &str, role: Role) -> RoleAssignments {
        self.secrets.push((principal.to_owned(), secret.to_owned()));
        self.assignments.push(Assignment {
            principal: principal.to_owned(),
            role,
            scope: Scope::All,
        });
        self
    }

    /// The registered clients of the local issuer and their secrets.
    pub fn clients(&self) -> impl Iterator<Item = (&str, &str)> {
        self.secrets.iter().map(|(p, s)| (p.as_str(), s.as_str()))
    }

    /// Whether `client` is a registered client of the local issuer and `secret` is its
    /// secret. The secrets are compared by their SHA-256 digests, so the time taken says
    /// nothing about how much of a guess matched.
    pub fn client_matches(&self, client: &str, secret: &str) -> bool {
        let digest = |s: &str| ring::digest::digest(&ring::digest::SHA256, s.as_bytes());
        let offered = digest(secret);
        self.secrets.iter().any(|(p, known)| {
            p == client
                && digest(known)
                    .as_ref()
                    .iter()
                    .zip(offered.as_ref())
                    .fold(0u8, |acc, (a, b)| acc | (a ^ b))
                    == 0
        })
    }

    /// The role `principal` has on `table` of `account` (`None`: the account itself),
    /// whichever issuer vouched for it, given the table roles its token claims (see the
    /// module docs).
    pub fn decide(
        &self,
        principal: &str,
        claimed: &[Role],
        account: &str,
        table: Option<&str>,
    ) -> Option<Role> {
        if self.assigns(principal) {
            return self.role(principal, account, table);
        }
        match self.default {
            Unassigned::Claimed => claimed.iter().copied().max(),
            Unassigned::Nothing => None,
            Unassigned::Role(role) => Some(role),
        }
    }

    /// The highest role assigned to `principal` that covers `table` of `account`
    /// (`table: None` — the account itself: only account-wide assignments count).
    pub fn role(&self, principal: &str, account: &str, table: Option<&str>) -> Option<Role> {
        self.assignments
            .iter()
            .filter(|a| a.principal == principal && a.scope.covers(account, table))
            .map(|a| a.role)
            .max()
    }

    /// Whether any assignment names `principal`.
    pub fn assigns(&self, principal: &str) -> bool {
        self.assignments.iter().any(|a| a.principal == principal)
    }

    /// The role the local issuer puts in the `roles` claim of a token for `principal`:
    /// its highest account-wide assignment, else the file's default (Contributor when the
    /// file sets none).
    pub fn issued_role(&self, principal: &str) -> Option<Role> {
        let assigned = self
            .assignments
            .iter()
            .filter(|a| a.principal == principal && a.scope == Scope::All)
            .map(|a| a.role)
            .max();
        if self.assigns(principal) {
            return assigned;
        }
        match self.default {
            Unassigned::Claimed => Some(Role::Contributor),
            Unassigned::Nothing => None,
            Unassigned::Role(role) => Some(role),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn files_parse_in_both_forms_with_scopes() {
        let list = RoleAssignments::from_json(
            r#"[{"principalId": "a", "role": "Storage Table Data Reader"},
                {"principalId": "b", "role": "contributor", "scope": "devstoreaccount1/orders"}]"#,
        )
        .unwrap();
        assert_eq!(list.role("a", "x", None), Some(Role::Reader));
        assert_eq!(
            list.role("b", "devstoreaccount1", Some("Orders")),
            Some(Role::Contributor)
        );
        assert_eq!(list.role("b", "devstoreaccount1", Some("other")), None);
        assert_eq!(list.role("b", "devstoreaccount1", None), None);
        assert_eq!(list.issued_role("nobody"), Some(Role::Contributor));
        assert_eq!(
            list.decide("nobody", &[Role::Reader], "x", None),
            Some(Role::Reader)
        );
        assert_eq!(list.issued_role("a"), Some(Role::Reader));
        let object = RoleAssignments::from_json(
            r#"{"default": "none", "assignments": [{"principalId": "c",
                "role": "Storage Table Data Contributor",
                "scope": "/subscriptions/s/resourceGroups/g/providers/Microsoft.Storage/storageAccounts/acct"}]}"#,
        )
        .unwrap();
        assert_eq!(object.issued_role("nobody"), None);
        assert_eq!(
            object.decide("nobody", &[Role::Contributor], "acct", None),
            None
        );
        assert_eq!(object.role("c", "acct", Some("t")), Some(Role::Contributor));
        assert_eq!(object.role("c", "other", Some("t")), None);
        assert_eq!(
            Scope::parse(
                "/subscriptions/s/resourceGroups/g/providers/Microsoft.Storage/storageAccounts/acct/tableServices/default/tables/t"
            ),
            Some(Scope::Table("acct".into(), "t".into()))
        );
        for bad in [
            r#"[{"principalId": "a", "role": "Owner"}]"#,
            r#"{"default": "admin"}"#,
            r#"[{"principalId": "a", "role": "reader", "scope": "a/b/c"}]"#,
            "not json",
        ] {
            assert!(RoleAssignments::from_json(bad).is_err(), "{bad}");
        }
    }
}
