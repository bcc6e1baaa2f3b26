//! Role assignments (`--role-assignments FILE`): which principal has which table role,
//! where.
//!
//! The file is JSON: a list of assignments, or an object with the list under
//! `"assignments"` and a `"default"` for principals the list does not name — `"none"`, or
//! a role (the local issuer's default is Contributor):
//!
//! ```json
//! {"default": "none",
//!  "assignments": [
//!    {"principalId": "app-1", "role": "Storage Table Data Reader"},
//!    {"principalId": "app-2", "role": "Storage Table Data Contributor",
//!     "scope": "/subscriptions/s/resourceGroups/g/providers/Microsoft.Storage/storageAccounts/devstoreaccount1/tableServices/default/tables/orders"}]}
//! ```
//!
//! A `scope` is Azure's resource id of an account or a table (as above), or the short
//! forms `ACCOUNT` and `ACCOUNT/TABLE`; without one, the assignment covers every account.
//! A principal's role on a table is the highest role of its assignments that cover it.

use serde::Deserialize;
use std::path::Path;

use super::{Role, TokenError};

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

/// The role assignments (see the module docs). The default (no file): nobody is
/// assigned anything, and the local issuer gives Contributor.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RoleAssignments {
    assignments: Vec<Assignment>,
    default: Option<Role>,
}

impl Default for RoleAssignments {
    fn default() -> RoleAssignments {
        RoleAssignments {
            assignments: Vec::new(),
            default: Some(Role::Contributor),
        }
    }
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
                 \"Storage Table Data Reader\"}}, …] or {{\"default\": \"none\", \
                 \"assignments\": […]}}"
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
            None => Some(Role::Contributor),
            Some(d) if d.eq_ignore_ascii_case("none") => None,
            Some(d) => Some(Role::parse(d).ok_or_else(|| {
                format!("`default`: `{d}` is not none, a table reader or a table contributor")
            })?),
        };
        let mut assignments = Vec::with_capacity(entries.len());
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
            assignments.push(Assignment {
                principal: e.principal_id,
                role,
                scope,
            });
        }
        Ok(RoleAssignments {
            assignments,
            default,
        })
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
    /// its highest account-wide assignment, else the file's default.
    pub fn issued_role(&self, principal: &str) -> Option<Role> {
        let assigned = self
            .assignments
            .iter()
            .filter(|a| a.principal == principal && a.scope == Scope::All)
            .map(|a| a.role)
            .max();
        if self.assigns(principal) {
            assigned
        } else {
            self.default
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
        assert_eq!(list.issued_role("a"), Some(Role::Reader));
        let object = RoleAssignments::from_json(
            r#"{"default": "none", "assignments": [{"principalId": "c",
                "role": "Storage Table Data Contributor",
                "scope": "/subscriptions/s/resourceGroups/g/providers/Microsoft.Storage/storageAccounts/acct"}]}"#,
        )
        .unwrap();
        assert_eq!(object.issued_role("nobody"), None);
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
