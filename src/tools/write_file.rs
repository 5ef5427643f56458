//! `write_file`: writes a whole file, creating parent directories, and the atomic
//! write (temp file in the same directory, then rename) that `edit_file` shares, so a
//! crash never leaves a half-written file.

use std::fs::{self, OpenOptions};
use std::io::Write;
use std::path::{Path, PathBuf};

use async_trait::async_trait;
use serde_json::{Value, json};

use super::{Definition, Safety, Tool, ToolContext, ToolError, required, schema};
use crate::permission::{Category, PermissionSpec, RuleName, TargetSpec};

/// The `write_file` tool.
pub struct WriteFile {
    def: Definition,
}

impl WriteFile {
    /// The tool with its definition.
    pub fn new() -> Self {
        Self {
            def: Definition {
                name: "write_file".into(),
                description: "Write complete UTF-8 content to a file, creating parent directories. Overwrites an existing file: read it first.".into(),
                input_schema: schema::object(&[("path", json!({"type": "string", "description": "Path of the file to write."})), ("content", json!({"type": "string", "description": "The complete new content."}))], &["path", "content"]),
                safety: Safety::SideEffect,
                system: false,
                timeout: None,
                aliases: Vec::new(),
                permission: Some(PermissionSpec::new(Category::Write, [RuleName::Write, RuleName::Edit], TargetSpec::writes("path"))),
            },
        }
    }
}

impl Default for WriteFile {
    fn default() -> Self {
        Self::new()
    }
}

#[async_trait]
impl Tool for WriteFile {
    fn definition(&self) -> &Definition {
        &self.def
    }

    async fn run(&self, input: Value, ctx: ToolContext) -> Result<String, ToolError> {
        let path: String = required(&input, "path")?;
        let content: String = required(&input, "content")?;
        let resolved = ctx.resolve(&path);
        tokio::task::spawn_blocking(move || {
            if resolved.is_dir() {
                return Err(ToolError::Failed(format!(
                    "`{path}` is a directory; give the path of a file to write"
                )));
            }
            let existed = resolved.exists();
            if let Some(parent) = resolved.parent() {
                fs::create_dir_all(parent).map_err(|e| {
                    ToolError::Failed(format!(
                        "cannot create the parent directories of `{path}`: {e}"
                    ))
                })?;
            }
            write_atomic(&resolved, content.as_bytes())
                .map_err(|e| ToolError::Failed(format!("cannot write `{path}`: {e}")))?;
            Ok(format!(
                "{} `{path}`: {} bytes, {} lines",
                if existed { "overwrote" } else { "created" },
                content.len(),
                line_count(&content)
            ))
        })
        .await
        .map_err(|e| ToolError::Failed(format!("writing was interrupted: {e}")))?
    }
}

/// Lines in `text`, counting a last line without a newline.
pub fn line_count(text: &str) -> usize {
    text.lines().count()
}

/// Replaces `path` with `bytes` atomically: the data goes to a temporary file in the
/// same directory, is flushed to disk, and is renamed over the target, so readers and
/// crashes see either the old or the new file, never half of one. An existing file's
/// permissions are kept; a symlink is followed and its target replaced.
pub fn write_atomic(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    let target = resolve_symlink(path)?;
    let dir = target
        .parent()
        .filter(|d| !d.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
    let name = target
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_else(|| "file".into());
    let tmp = dir.join(format!(
        ".{name}.crew-tmp-{}-{}",
        std::process::id(),
        rand::random::<u32>()
    ));
    let result = (|| {
        let mut file = OpenOptions::new().write(true).create_new(true).open(&tmp)?;
        if let Ok(meta) = fs::metadata(&target) {
            file.set_permissions(meta.permissions())?;
        }
        file.write_all(bytes)?;
        file.sync_all()?;
        fs::rename(&tmp, &target)
    })();
    if result.is_err() {
        let _ = fs::remove_file(&tmp);
    }
    result?;
    // Persist the rename itself; not all filesystems allow syncing a directory.
    if let Ok(d) = fs::File::open(dir) {
        let _ = d.sync_all();
    }
    Ok(())
}

/// Follows a symlink at `path` to the file it names (so the link survives the write).
fn resolve_symlink(path: &Path) -> std::io::Result<PathBuf> {
    match fs::symlink_metadata(path) {
        Ok(m) if m.file_type().is_symlink() => match fs::canonicalize(path) {
            Ok(real) => Ok(real),
            // A dangling link: write where it points.
            Err(_) => {
                let link = fs::read_link(path)?;
                Ok(path.parent().unwrap_or(Path::new(".")).join(link))
            }
        },
        _ => Ok(path.to_path_buf()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn atomic_write_replaces_content_and_leaves_no_temp_file() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("a.txt");
        write_atomic(&p, b"one").unwrap();
        write_atomic(&p, b"two").unwrap();
        assert_eq!(fs::read_to_string(&p).unwrap(), "two");
        let names: Vec<_> = fs::read_dir(dir.path()).unwrap().flatten().collect();
        assert_eq!(names.len(), 1, "temp files left: {names:?}");
    }

    #[test]
    fn atomic_write_keeps_permissions_and_symlinks() {
        use std::os::unix::fs::PermissionsExt;
        let dir = tempfile::tempdir().unwrap();
        let real = dir.path().join("script.sh");
        fs::write(&real, "old").unwrap();
        fs::set_permissions(&real, fs::Permissions::from_mode(0o755)).unwrap();
        let link = dir.path().join("link.sh");
        std::os::unix::fs::symlink(&real, &link).unwrap();
        write_atomic(&link, b"new").unwrap();
        assert!(
            fs::symlink_metadata(&link)
                .unwrap()
                .file_type()
                .is_symlink()
        );
        assert_eq!(fs::read_to_string(&real).unwrap(), "new");
        let mode = fs::metadata(&real).unwrap().permissions().mode();
        assert_eq!(mode & 0o777, 0o755);
    }

    #[test]
    fn atomic_write_into_a_missing_directory_fails_cleanly() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("missing/a.txt");
        assert!(write_atomic(&p, b"x").is_err());
        assert!(!p.exists());
    }
}
