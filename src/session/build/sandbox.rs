//! The lead's command sandbox as the settings ask for it: the writable roots, the
//! `sandbox.filesystem` lists handed to the command runner, and the one notice of which
//! OS sandbox layers hold here (or the refusal to start under `sandbox.failIfUnavailable`).

use anyhow::bail;

use crate::permission::Policy;
use crate::tools::CommandSandbox;

/// The lead's command sandbox: every command runs confined, in the profile the engine
/// chooses for its call (`permission::profile`), below the cwd, the additional
/// directories and the user's `sandbox.filesystem.allowWrite`. Also hands the
/// `sandbox.filesystem` deny lists to the command runner and says, once, which sandbox
/// layers hold here; with `sandbox.failIfUnavailable` a missing core layer (Landlock,
/// mount namespaces) stops the session instead.
pub(super) fn command_sandbox(
    policy: &Policy,
    cwd: &std::path::Path,
    warn: &mut dyn FnMut(String),
) -> anyhow::Result<CommandSandbox> {
    crate::sandbox::extra::set(crate::sandbox::extra::ExtraPaths {
        deny_read: policy.sandbox.deny_read.clone(),
        deny_write: policy.sandbox.deny_write.clone(),
        allow_read: policy.sandbox.allow_read.clone(),
    });
    let layers = crate::sandbox::layers::probe();
    if policy.sandbox.fail_if_unavailable && (!layers.landlock || !layers.mount_ns) {
        bail!(
            "sandbox.failIfUnavailable is set, and the OS sandbox cannot start here: missing {}. \
             Run crew on a kernel with Landlock and where namespaces are allowed, or remove \
             failIfUnavailable from the settings to run with the layers that hold (commands \
             that no human approved are then refused where Landlock is missing)",
            layers.missing().join(", ")
        );
    }
    if let Some(line) = layers.summary() {
        warn(line);
    }
    if policy.sandbox.disabled {
        warn(
            "sandbox.enabled is false in your settings: commands run outside the OS sandbox \
             (except under dontAsk and auto, and subagents'). This is unsafe"
                .into(),
        );
    }
    let mut writable_roots = vec![cwd.to_path_buf()];
    writable_roots.extend(policy.additional_roots.iter().cloned());
    writable_roots.extend(policy.sandbox.writable_roots.iter().cloned());
    Ok(CommandSandbox::landlock(writable_roots))
}
