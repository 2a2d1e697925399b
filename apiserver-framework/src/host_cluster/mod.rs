//! The host cluster an extension server is aggregated into, as the layers above reach it:
//! clients of its API ([`client`]: delegated authentication and authorization, admission
//! webhooks, the aggregator) and the resolution of its Services to backend addresses
//! ([`resolver`]: APIService backends, webhook services).

pub mod client;
pub mod resolver;
