//! [`Provider`]: one way of writing values, with upstream's stored format, so that values
//! written under one provider list are read under the next during a key rotation:
//!
//! - `identity`: the value as it is, no prefix;
//! - `aescbc`: `k8s:enc:aescbc:v1:<key name>:`, a random 16-byte IV, then the value under
//!   AES-CBC with PKCS#7 padding (a 16-, 24- or 32-byte key);
//! - `aesgcm`: `k8s:enc:aesgcm:v1:<key name>:`, a random 12-byte nonce, then the value and its
//!   tag under AES-GCM (a 16-, 24- or 32-byte key), authenticated with the storage key, so a
//!   value copied under another key does not decrypt;
//! - `secretbox`: `k8s:enc:secretbox:v1:<key name>:`, a random 24-byte nonce, then NaCl's
//!   secretbox of the value (XSalsa20-Poly1305, its 16-byte tag first) under a 32-byte key, as
//!   upstream's `secretbox` transformer writes it with Go's `nacl/secretbox.Seal`;
//! - `kms` (KMS v2, feature `kms`): `k8s:enc:kms:v2:<provider name>:`, then upstream's
//!   `EncryptedObject` envelope (see [`kms`](super::kms)).

use aes::{Aes128, Aes192, Aes256};
use aes_gcm::aead::{Aead, KeyInit, Payload};
use aes_gcm::{AesGcm, aead::consts::U12};
use cbc::cipher::block_padding::Pkcs7;
use cbc::cipher::{BlockModeDecrypt, BlockModeEncrypt, KeyIvInit};
use crypto_secretbox::XSalsa20Poly1305;

/// What every encrypted value starts with.
pub const ENCRYPTED_PREFIX: &[u8] = b"k8s:enc:";

/// The key sizes AES takes, in bytes.
pub const AES_KEY_SIZES: [usize; 3] = [16, 24, 32];

/// The key size secretbox takes, in bytes.
pub const SECRETBOX_KEY_SIZE: usize = 32;

const CBC_IV: usize = 16;
const GCM_NONCE: usize = 12;
const SECRETBOX_NONCE: usize = 24;
const SECRETBOX_TAG: usize = 16;

/// A `kms` provider's configuration (`apiVersion: v2`).
#[derive(Clone, Debug)]
pub struct KmsConfig {
    /// The provider's name, part of the prefix.
    pub name: String,
    /// The plugin's unix socket (the path of a `unix://` endpoint).
    pub socket: std::path::PathBuf,
    /// How long one call to the plugin may take.
    pub timeout: std::time::Duration,
}

/// One provider of an encryption configuration, with its key.
#[derive(Clone)]
pub enum Provider {
    /// Values as they are.
    Identity,
    /// AES-CBC under the key named `name`.
    AesCbc {
        /// The key's name, part of the prefix.
        name: String,
        /// The key (16, 24 or 32 bytes).
        key: Vec<u8>,
    },
    /// AES-GCM under the key named `name`.
    AesGcm {
        /// The key's name, part of the prefix.
        name: String,
        /// The key (16, 24 or 32 bytes).
        key: Vec<u8>,
    },
    /// XSalsa20-Poly1305 (NaCl's secretbox) under the key named `name`.
    Secretbox {
        /// The key's name, part of the prefix.
        name: String,
        /// The key (32 bytes).
        key: Vec<u8>,
    },
    /// KMS v2: DEKs encrypted by an external plugin.
    #[cfg(feature = "kms")]
    Kms(std::sync::Arc<super::kms::KmsV2>),
}

/// Keys never appear in debug output.
impl std::fmt::Debug for Provider {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Provider::Identity => f.write_str("identity"),
            Provider::AesCbc { name, .. } => write!(f, "aescbc key {name:?}"),
            Provider::AesGcm { name, .. } => write!(f, "aesgcm key {name:?}"),
            Provider::Secretbox { name, .. } => write!(f, "secretbox key {name:?}"),
            #[cfg(feature = "kms")]
            Provider::Kms(kms) => write!(f, "kms v2 {:?}", kms.name()),
        }
    }
}

impl Provider {
    /// The prefix of the values this provider writes.
    pub fn prefix(&self) -> Vec<u8> {
        match self {
            Provider::Identity => Vec::new(),
            Provider::AesCbc { name, .. } => format!("k8s:enc:aescbc:v1:{name}:").into_bytes(),
            Provider::AesGcm { name, .. } => format!("k8s:enc:aesgcm:v1:{name}:").into_bytes(),
            Provider::Secretbox { name, .. } => {
                format!("k8s:enc:secretbox:v1:{name}:").into_bytes()
            }
            #[cfg(feature = "kms")]
            Provider::Kms(kms) => format!("k8s:enc:kms:v2:{}:", kms.name()).into_bytes(),
        }
    }

    /// `plain`, as stored at `key`.
    pub async fn encrypt(&self, key: &str, plain: &[u8]) -> Result<Vec<u8>, String> {
        let mut out = self.prefix();
        match self {
            Provider::Identity => out.extend_from_slice(plain),
            Provider::AesCbc { key: secret, .. } => {
                let iv: [u8; CBC_IV] = rand::random();
                out.extend_from_slice(&iv);
                out.extend(cbc_encrypt(secret, &iv, plain)?);
            }
            Provider::AesGcm { key: secret, .. } => {
                let nonce: [u8; GCM_NONCE] = rand::random();
                out.extend_from_slice(&nonce);
                out.extend(gcm(secret, &nonce, key, plain, true)?);
            }
            Provider::Secretbox { key: secret, .. } => {
                let nonce: [u8; SECRETBOX_NONCE] = rand::random();
                out.extend_from_slice(&nonce);
                out.extend(secretbox(secret, &nonce, plain, true)?);
            }
            #[cfg(feature = "kms")]
            Provider::Kms(kms) => out.extend(kms.encrypt(key, plain).await?),
        }
        Ok(out)
    }

    /// The value `stored` at `key` holds, `stored` being what follows this provider's prefix.
    pub async fn decrypt(&self, key: &str, stored: &[u8]) -> Result<Vec<u8>, String> {
        match self {
            Provider::Identity if stored.starts_with(ENCRYPTED_PREFIX) => {
                Err("identity transformer tried to read encrypted data".into())
            }
            Provider::Identity => Ok(stored.to_vec()),
            Provider::AesCbc { key: secret, .. } => {
                if stored.len() < CBC_IV {
                    return Err("the stored data was shorter than the required size".into());
                }
                let (iv, data) = stored.split_at(CBC_IV);
                cbc_decrypt(secret, iv, data)
            }
            Provider::AesGcm { key: secret, .. } => {
                if stored.len() < GCM_NONCE {
                    return Err("the stored data was shorter than the required size".into());
                }
                let (nonce, data) = stored.split_at(GCM_NONCE);
                gcm(secret, nonce, key, data, false)
            }
            Provider::Secretbox { key: secret, .. } => {
                if stored.len() < SECRETBOX_NONCE + SECRETBOX_TAG {
                    return Err("the stored data was shorter than the required size".into());
                }
                let (nonce, data) = stored.split_at(SECRETBOX_NONCE);
                secretbox(secret, nonce, data, false)
            }
            #[cfg(feature = "kms")]
            Provider::Kms(kms) => kms.decrypt(key, stored).await,
        }
    }
}

/// AES-CBC with PKCS#7 padding under `secret` and `iv`.
fn cbc_encrypt(secret: &[u8], iv: &[u8], plain: &[u8]) -> Result<Vec<u8>, String> {
    let bad = |e: cbc::cipher::InvalidLength| e.to_string();
    Ok(match secret.len() {
        16 => cbc::Encryptor::<Aes128>::new_from_slices(secret, iv)
            .map_err(bad)?
            .encrypt_padded_vec::<Pkcs7>(plain),
        24 => cbc::Encryptor::<Aes192>::new_from_slices(secret, iv)
            .map_err(bad)?
            .encrypt_padded_vec::<Pkcs7>(plain),
        _ => cbc::Encryptor::<Aes256>::new_from_slices(secret, iv)
            .map_err(bad)?
            .encrypt_padded_vec::<Pkcs7>(plain),
    })
}

fn cbc_decrypt(secret: &[u8], iv: &[u8], data: &[u8]) -> Result<Vec<u8>, String> {
    let bad = |e: cbc::cipher::InvalidLength| e.to_string();
    let unpadded = match secret.len() {
        16 => cbc::Decryptor::<Aes128>::new_from_slices(secret, iv)
            .map_err(bad)?
            .decrypt_padded_vec::<Pkcs7>(data),
        24 => cbc::Decryptor::<Aes192>::new_from_slices(secret, iv)
            .map_err(bad)?
            .decrypt_padded_vec::<Pkcs7>(data),
        _ => cbc::Decryptor::<Aes256>::new_from_slices(secret, iv)
            .map_err(bad)?
            .decrypt_padded_vec::<Pkcs7>(data),
    };
    unpadded.map_err(|_| "invalid PKCS7 data (empty or not padded)".into())
}

/// AES-GCM under `secret` and `nonce`, authenticating `key`: encrypts `data` (`sealing`) or
/// opens it.
fn gcm(
    secret: &[u8],
    nonce: &[u8],
    key: &str,
    data: &[u8],
    sealing: bool,
) -> Result<Vec<u8>, String> {
    fn run<C: Aead + KeyInit>(
        secret: &[u8],
        nonce: &[u8],
        payload: Payload<'_, '_>,
        sealing: bool,
    ) -> Result<Vec<u8>, String> {
        let cipher = C::new_from_slice(secret).map_err(|e| e.to_string())?;
        let nonce = aes_gcm::aead::Nonce::<C>::try_from(nonce).map_err(|_| "a bad nonce")?;
        match sealing {
            true => cipher.encrypt(&nonce, payload),
            false => cipher.decrypt(&nonce, payload),
        }
        .map_err(|_| "cipher: message authentication failed".into())
    }
    let payload = Payload {
        msg: data,
        aad: key.as_bytes(),
    };
    match secret.len() {
        16 => run::<AesGcm<Aes128, U12>>(secret, nonce, payload, sealing),
        24 => run::<AesGcm<Aes192, U12>>(secret, nonce, payload, sealing),
        _ => run::<AesGcm<Aes256, U12>>(secret, nonce, payload, sealing),
    }
}

/// NaCl's secretbox under `secret` and `nonce`: seals `data` (`sealing`, the tag first, as Go's
/// `secretbox.Seal` writes it) or opens it. Nothing is authenticated beside the value, as
/// upstream's transformer authenticates nothing else.
fn secretbox(secret: &[u8], nonce: &[u8], data: &[u8], sealing: bool) -> Result<Vec<u8>, String> {
    use crypto_secretbox::aead::{Aead as _, KeyInit as _};
    let cipher = XSalsa20Poly1305::new_from_slice(secret).map_err(|e| e.to_string())?;
    let nonce = crypto_secretbox::Nonce::from_slice(nonce);
    match sealing {
        true => cipher
            .encrypt(nonce, data)
            .map_err(|_| "secretbox: sealing failed".into()),
        // Upstream's message for a box that does not open.
        false => cipher
            .decrypt(nonce, data)
            .map_err(|_| "output array was not large enough for encryption".into()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn providers() -> Vec<Provider> {
        let mut all = vec![Provider::Identity];
        for size in AES_KEY_SIZES {
            let key = vec![7u8; size];
            all.push(Provider::AesCbc {
                name: "k1".into(),
                key: key.clone(),
            });
            all.push(Provider::AesGcm {
                name: "k1".into(),
                key,
            });
        }
        all.push(Provider::Secretbox {
            name: "k1".into(),
            key: vec![7u8; SECRETBOX_KEY_SIZE],
        });
        all
    }

    #[tokio::test]
    async fn values_round_trip_under_their_prefix_and_hide_the_plain_text() {
        let plain = br#"{"spec":{"reference":"a-secret-value"}}"#;
        for p in providers() {
            let stored = p
                .encrypt("/g.example.com/things/ns/a", plain)
                .await
                .unwrap();
            let prefix = p.prefix();
            assert!(stored.starts_with(&prefix), "{p:?}");
            if !matches!(p, Provider::Identity) {
                let text = String::from_utf8_lossy(&stored);
                assert!(!text.contains("a-secret-value"), "{p:?}: {text}");
                assert!(prefix.starts_with(ENCRYPTED_PREFIX), "{p:?}");
            }
            let back = p
                .decrypt("/g.example.com/things/ns/a", &stored[prefix.len()..])
                .await
                .unwrap();
            assert_eq!(back, plain, "{p:?}");
        }
    }

    #[tokio::test]
    async fn aesgcm_values_are_bound_to_their_key_and_tampering_is_caught() {
        let p = Provider::AesGcm {
            name: "k".into(),
            key: vec![1; 32],
        };
        let stored = p.encrypt("/a", b"value").await.unwrap();
        let body = &stored[p.prefix().len()..];
        assert!(
            p.decrypt("/b", body).await.is_err(),
            "copied under another key"
        );
        let mut tampered = body.to_vec();
        *tampered.last_mut().unwrap() ^= 1;
        assert!(p.decrypt("/a", &tampered).await.is_err());
        let other = Provider::AesGcm {
            name: "k".into(),
            key: vec![2; 32],
        };
        assert!(other.decrypt("/a", body).await.is_err(), "another key");
        assert!(Provider::Identity.decrypt("/a", &stored).await.is_err());
    }

    /// A value upstream's secretbox transformer (k8s.io/apiserver v0.34.4,
    /// `secretbox.NewSecretboxTransformer(key).TransformToStorage`) wrote with the key
    /// 0x00, 0x01, ..., 0x1f: the nonce, then the box, the tag first.
    const UPSTREAM_SECRETBOX: &str = "a538a65acdf09ff84fae777e43e8384fd11b77af811a1dedc917999bd9d8\
                                      13399dab2126128fe78f3381c55cb8fbca73b4c8c7ab64c60daf6624";

    fn unhex(text: &str) -> Vec<u8> {
        (0..text.len())
            .step_by(2)
            .map(|i| u8::from_str_radix(&text[i..i + 2], 16).unwrap())
            .collect()
    }

    #[tokio::test]
    async fn secretbox_reads_what_upstream_wrote_and_writes_its_layout() {
        let p = Provider::Secretbox {
            name: "k".into(),
            key: (0..32).collect(),
        };
        let upstream = unhex(UPSTREAM_SECRETBOX);
        assert_eq!(
            p.decrypt("/any", &upstream).await.unwrap(),
            br#"{"kind":"Flunder"}"#
        );
        // Ours: prefix, 24-byte nonce, 16-byte tag, then as many bytes as the value.
        let stored = p.encrypt("/any", b"12345").await.unwrap();
        assert_eq!(stored.len(), p.prefix().len() + 24 + 16 + 5);
        let body = &stored[p.prefix().len()..];
        assert_eq!(p.decrypt("/other", body).await.unwrap(), b"12345");
        let mut tampered = body.to_vec();
        tampered[30] ^= 1;
        assert_eq!(
            p.decrypt("/any", &tampered).await.unwrap_err(),
            "output array was not large enough for encryption"
        );
        assert!(
            p.decrypt("/any", &body[..39]).await.is_err(),
            "shorter than a nonce and a tag"
        );
    }
}
