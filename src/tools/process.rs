//! Child processes in their own process group, killed as a group (pending — issue 2).
