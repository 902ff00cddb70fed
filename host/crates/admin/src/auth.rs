//! Who may sign in: the super-admin token and the ordinary users' tokens, kept only as SHA-256
//! hashes in `<config dir>/admin-credentials.json` (mode 0600).
//!
//! Tokens are 256 random bits, so a plain SHA-256 is enough (no slow password hash: there is no
//! dictionary to guess from). Every comparison is constant-time.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};
use subtle::ConstantTimeEq;

/// Who a signed-in session is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Role {
    /// May read and save the deployment config (`/agent-plugins/`) and the settings page.
    SuperAdmin,
    /// May use the generic settings page only.
    User,
}

impl Role {
    pub fn as_str(self) -> &'static str {
        match self {
            Role::SuperAdmin => "super admin",
            Role::User => "user",
        }
    }
}

/// The credentials file's contents.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct CredentialsFile {
    /// Hex SHA-256 of the super-admin token.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    super_admin: Option<String>,
    /// User name → hex SHA-256 of that user's token.
    #[serde(default)]
    users: BTreeMap<String, String>,
}

/// The credentials file.
#[derive(Debug, Clone)]
pub struct Credentials {
    path: PathBuf,
    file: CredentialsFile,
}

/// `<config dir>/admin-credentials.json`.
pub fn default_path() -> Result<PathBuf, String> {
    cst_config::config_dir::config_dir()
        .map(|d| d.join("admin-credentials.json"))
        .map_err(|e| e.to_string())
}

/// 32 random bytes, hex.
pub fn random_hex() -> Result<String, String> {
    let mut buf = [0u8; 32];
    getrandom::fill(&mut buf).map_err(|e| format!("no random numbers from the system: {e}"))?;
    Ok(hex::encode(buf))
}

/// A new sign-in token (`cst_admin_` + 64 hex digits).
fn new_token() -> Result<String, String> {
    Ok(format!("cst_admin_{}", random_hex()?))
}

/// Hex SHA-256.
pub fn sha256_hex(text: &str) -> String {
    hex::encode(Sha256::digest(text.as_bytes()))
}

/// Constant-time equality of two strings (the lengths are not secret).
pub fn same(a: &str, b: &str) -> bool {
    a.len() == b.len() && bool::from(a.as_bytes().ct_eq(b.as_bytes()))
}

impl Credentials {
    /// Read the file at `path` (missing: no credentials yet). On Unix a file others can read or
    /// write is refused: the hashes are not secrets in the strong sense, but a file others can
    /// write would let them add a user.
    pub fn load(path: &Path) -> Result<Self, String> {
        let text = match std::fs::read_to_string(path) {
            Ok(t) => t,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                return Ok(Self {
                    path: path.to_path_buf(),
                    file: CredentialsFile::default(),
                })
            }
            Err(e) => return Err(format!("{}: cannot read: {e}", path.display())),
        };
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            let mode = std::fs::metadata(path)
                .map_err(|e| format!("{}: {e}", path.display()))?
                .permissions()
                .mode();
            if mode & 0o077 != 0 {
                return Err(format!(
                    "{}: readable or writable by other users: `chmod 600` it (or delete it and start again)",
                    path.display()
                ));
            }
        }
        let file =
            serde_json::from_str(&text).map_err(|e| format!("{}: not a credentials file: {e}", path.display()))?;
        Ok(Self {
            path: path.to_path_buf(),
            file,
        })
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Create the super-admin token when there is none yet: `Some(token)`, to be shown once.
    pub fn ensure_super_admin(&mut self) -> Result<Option<String>, String> {
        if self.file.super_admin.is_some() {
            return Ok(None);
        }
        self.reset_super_admin().map(Some)
    }

    /// A new super-admin token (the old one stops working); stored hashed, returned once.
    pub fn reset_super_admin(&mut self) -> Result<String, String> {
        let token = new_token()?;
        self.file.super_admin = Some(sha256_hex(&token));
        self.save()?;
        Ok(token)
    }

    /// A new token for the ordinary user `name` (replacing theirs); stored hashed, returned once.
    pub fn add_user(&mut self, name: &str) -> Result<String, String> {
        cst_config::deployment::check_id(name).map_err(|why| format!("user name {why}"))?;
        let token = new_token()?;
        self.file.users.insert(name.to_string(), sha256_hex(&token));
        self.save()?;
        Ok(token)
    }

    /// The role `token` signs in as, if any. Compares against every stored hash, in constant time
    /// each, so the time taken says nothing about which one (nearly) matched.
    pub fn role_of(&self, token: &str) -> Option<Role> {
        let h = sha256_hex(token.trim());
        let mut role = None;
        if let Some(admin) = &self.file.super_admin {
            if same(&h, admin) {
                role = Some(Role::SuperAdmin);
            }
        }
        for stored in self.file.users.values() {
            if same(&h, stored) && role.is_none() {
                role = Some(Role::User);
            }
        }
        role
    }

    /// Write the file atomically with mode 0600 (its folder 0700 when created).
    fn save(&self) -> Result<(), String> {
        let text = serde_json::to_string_pretty(&self.file).map_err(|e| e.to_string())? + "\n";
        let dir = self.path.parent().unwrap_or_else(|| Path::new("."));
        if !dir.exists() {
            let mut b = std::fs::DirBuilder::new();
            b.recursive(true);
            #[cfg(unix)]
            std::os::unix::fs::DirBuilderExt::mode(&mut b, 0o700);
            b.create(dir)
                .map_err(|e| format!("{}: cannot create: {e}", dir.display()))?;
        }
        // Only this user may read the token hashes.
        cst_config::fs::replace_atomically(&self.path, text.as_bytes(), Some(0o600))
            .map_err(|e| format!("{}: cannot write: {e}", self.path.display()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tokens_are_stored_hashed_with_mode_0600() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("cfg").join("admin-credentials.json");
        let mut c = Credentials::load(&p).unwrap();
        let admin = c.ensure_super_admin().unwrap().unwrap();
        assert!(c.ensure_super_admin().unwrap().is_none(), "shown once");
        let user = c.add_user("alice").unwrap();
        let text = std::fs::read_to_string(&p).unwrap();
        assert!(!text.contains(&admin) && !text.contains(&user), "{text}");
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            let mode = std::fs::metadata(&p).unwrap().permissions().mode() & 0o777;
            assert_eq!(mode, 0o600);
        }
        let c = Credentials::load(&p).unwrap();
        assert_eq!(c.role_of(&admin), Some(Role::SuperAdmin));
        assert_eq!(c.role_of(&user), Some(Role::User));
        assert_eq!(c.role_of("cst_admin_00"), None);
        assert_eq!(c.role_of(""), None);
        assert!(c.clone().add_user("../x").is_err());
    }
}
