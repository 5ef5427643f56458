//! The Model Context Protocol: crew as an MCP server (`serve`).

pub mod serve;
