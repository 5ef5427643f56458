//! Where an agent definition's subagents run, as the definition states it:
//! `placement: local` (this machine only), `placement: remote` (always on a worker), or
//! unset (here, and on a worker when the local slots are full and the session has
//! workers). The choice for one agent is [`super::host::choose`].

use std::str::FromStr;

/// An agent definition's placement.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Placement {
    /// Here, or on a worker when local slots are full.
    #[default]
    Auto,
    /// Only here.
    Local,
    /// Always on a worker.
    Remote,
}

impl FromStr for Placement {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s {
            "local" => Ok(Placement::Local),
            "remote" => Ok(Placement::Remote),
            other => Err(format!(
                "field `placement`: `{other}` is not `local` or `remote`"
            )),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_the_two_names_and_refuses_others() {
        assert_eq!("remote".parse::<Placement>(), Ok(Placement::Remote));
        assert_eq!("local".parse::<Placement>(), Ok(Placement::Local));
        assert!(
            "cloud"
                .parse::<Placement>()
                .unwrap_err()
                .contains("placement")
        );
    }
}
