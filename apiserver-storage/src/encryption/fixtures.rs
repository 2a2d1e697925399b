//! The providers and configurations the encryption tests build: a key of one repeated byte,
//! and a configuration encrypting Flunders.

use super::{EncryptionConfig, Provider, Providers, Rule};

/// `aesgcm` with a 32-byte key of `byte`.
pub(crate) fn gcm(name: &str, byte: u8) -> Provider {
    Provider::AesGcm {
        name: name.into(),
        key: vec![byte; 32],
    }
}

/// `aescbc` with a 32-byte key of `byte`.
pub(crate) fn cbc(name: &str, byte: u8) -> Provider {
    Provider::AesCbc {
        name: name.into(),
        key: vec![byte; 32],
    }
}

/// One rule: Flunders, through `providers`.
pub(crate) fn flunders(providers: Vec<Provider>) -> EncryptionConfig {
    EncryptionConfig {
        rules: vec![Rule {
            resources: vec!["flunders.wardle.example.com".into()],
            providers: Providers::new(providers),
        }],
    }
}
