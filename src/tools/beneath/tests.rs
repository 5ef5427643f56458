//! Unit tests of the beneath-resolution: atomic writes, escapes through links, and
//! identity checks.

use super::*;
use std::fs;
use std::os::unix::fs::{PermissionsExt, symlink};

fn root() -> (tempfile::TempDir, PathBuf, ToolContext) {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().canonicalize().unwrap();
    let ctx = ToolContext::new(&root, "test");
    (dir, root, ctx)
}

fn write(ctx: &ToolContext, p: &Path, bytes: &[u8]) -> Result<(), ToolError> {
    Beneath::writes(ctx)
        .parent(p, "f", Missing::Fail)?
        .write_atomic(bytes, "f")
}

#[test]
fn atomic_write_replaces_content_and_leaves_no_temp_file() {
    let (_d, root, ctx) = root();
    let p = root.join("a.txt");
    write(&ctx, &p, b"one").unwrap();
    write(&ctx, &p, b"two").unwrap();
    assert_eq!(fs::read_to_string(&p).unwrap(), "two");
    let names: Vec<_> = fs::read_dir(&root).unwrap().flatten().collect();
    assert_eq!(names.len(), 1, "temp files left: {names:?}");
}

#[test]
fn atomic_write_keeps_permissions_and_symlinks_inside_the_root() {
    let (_d, root, ctx) = root();
    let real = root.join("script.sh");
    fs::write(&real, "old").unwrap();
    fs::set_permissions(&real, fs::Permissions::from_mode(0o755)).unwrap();
    let link = root.join("link.sh");
    symlink(&real, &link).unwrap();
    write(&ctx, &link, b"new").unwrap();
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
fn a_missing_directory_fails_cleanly_unless_created() {
    let (_d, root, ctx) = root();
    let p = root.join("missing/deeper/a.txt");
    assert!(write(&ctx, &p, b"x").is_err());
    assert!(!p.exists());
    let parent = Beneath::writes(&ctx)
        .parent(&p, "f", Missing::Create)
        .unwrap();
    parent.write_atomic(b"x", "f").unwrap();
    assert_eq!(fs::read_to_string(&p).unwrap(), "x");
}

#[test]
fn nothing_outside_the_roots_is_opened_or_written() {
    let (_d, root, ctx) = root();
    let (_o, outside, _) = self::root();
    fs::write(outside.join("secret"), "KEY").unwrap();
    symlink(&outside, root.join("out")).unwrap();
    symlink(outside.join("secret"), root.join("key")).unwrap();
    let reads = Beneath::reads(&ctx, RuleName::Read);
    for p in ["out/secret", "key", "../secret"] {
        let err = reads.open(&root.join(p), p).unwrap_err().to_string();
        assert!(err.contains("outside the sandbox roots"), "{p}: {err}");
    }
    for p in ["out/new.txt", "key", "out/sub/new.txt"] {
        let err = Beneath::writes(&ctx)
            .parent(&root.join(p), p, Missing::Create)
            .unwrap_err()
            .to_string();
        assert!(err.contains("outside the sandbox roots"), "{p}: {err}");
    }
    assert_eq!(fs::read_dir(&outside).unwrap().count(), 1);
    assert_eq!(fs::read_to_string(outside.join("secret")).unwrap(), "KEY");
}

#[test]
fn a_directory_swapped_for_a_symlink_after_resolution_is_refused() {
    let (_d, root, ctx) = root();
    let (_o, outside, _) = self::root();
    fs::create_dir(root.join("d")).unwrap();
    fs::write(root.join("d/f"), "inside").unwrap();
    fs::write(outside.join("f"), "KEY").unwrap();
    // Resolved while `d` is a directory, opened after it became a link: the kernel
    // refuses the link on the way.
    let b = Beneath::reads(&ctx, RuleName::Read);
    let (real, root_dir, rel) = b.locate(&root.join("d/f"), "d/f").unwrap();
    assert_eq!(real, root.join("d/f"));
    fs::rename(root.join("d"), root.join("d.old")).unwrap();
    symlink(&outside, root.join("d")).unwrap();
    let fd = open_root(root_dir, "d/f").unwrap();
    let err = openat2(&fd, &rel, OFlags::RDONLY, "d/f").unwrap_err();
    assert!(
        err.to_string()
            .contains("changed while it was being opened"),
        "{err}"
    );
}

#[test]
fn a_hard_link_to_a_credential_is_not_opened() {
    let (_d, root, _) = root();
    let home = root.join("home");
    fs::create_dir_all(home.join(".ssh")).unwrap();
    fs::create_dir_all(home.join("proj")).unwrap();
    fs::write(home.join(".ssh/id_rsa"), "KEY").unwrap();
    fs::hard_link(home.join(".ssh/id_rsa"), home.join("proj/copy")).unwrap();
    let policy = crate::permission::Policy {
        home: Some(home.clone()),
        ..Default::default()
    };
    let mut ctx = ToolContext::new(home.join("proj"), "test");
    ctx.walk = std::sync::Arc::new(crate::permission::walk::WalkFilter::new(&policy));
    let err = Beneath::reads(&ctx, RuleName::Read)
        .open(&home.join("proj/copy"), "copy")
        .unwrap_err();
    assert!(err.to_string().contains("denied"), "{err}");
}

/// The open without a resolution first takes plain paths only: `link/../a.txt` names the
/// parent of where `link` leads, not the root's `a.txt`, and a symlink on the way is
/// followed (inside the roots) by the full resolution, never by the kernel's open.
#[test]
fn a_dot_dot_after_a_link_is_resolved_where_the_link_leads() {
    let (_d, root, ctx) = root();
    let outside = tempfile::tempdir().unwrap();
    let far = outside.path().canonicalize().unwrap().join("dir");
    fs::create_dir(&far).unwrap();
    fs::write(far.parent().unwrap().join("a.txt"), "outside").unwrap();
    fs::write(root.join("a.txt"), "inside").unwrap();
    symlink(&far, root.join("link")).unwrap();
    let beneath = Beneath::reads(&ctx, RuleName::Read);
    let err = beneath
        .open(&root.join("link/../a.txt"), "link/../a.txt")
        .unwrap_err();
    assert!(
        err.to_string().contains("outside the sandbox roots"),
        "{err}"
    );
    // A link inside the roots to a file inside them is read where it leads.
    fs::create_dir(root.join("sub")).unwrap();
    fs::write(root.join("sub/b.txt"), "b").unwrap();
    symlink(root.join("sub"), root.join("alias")).unwrap();
    let mut opened = beneath
        .open(&root.join("alias/b.txt"), "alias/b.txt")
        .unwrap();
    let mut text = String::new();
    std::io::Read::read_to_string(&mut opened.file, &mut text).unwrap();
    assert_eq!(text, "b");
    // The plain path reads the root's own file.
    let mut opened = beneath.open(&root.join("a.txt"), "a.txt").unwrap();
    let mut text = String::new();
    std::io::Read::read_to_string(&mut opened.file, &mut text).unwrap();
    assert_eq!(text, "inside");
}
