//! The registry layer: per-resource REST storage, the generic store and its strategy, request
//! options and the server's scheme of groups.

pub mod admission;
pub(crate) mod checked_values;
pub mod computed;
pub mod connect;
pub mod continue_token;
pub mod conversion;
pub(crate) mod converted_events;
pub mod delegating;
pub(crate) mod encoded_events;
pub(crate) mod encoding;
pub mod field_validation;
pub(crate) mod group;
pub mod options;
pub mod rest;
pub mod scheme;
pub mod store;
pub mod strategy;
pub mod subresource;
pub mod typed;
pub mod versions;
pub(crate) mod watch;
pub(crate) mod watch_line;
pub(crate) mod with_subresources;
