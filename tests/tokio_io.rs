//! tokio::io traits on yieldloop types (feature `tokio`).
