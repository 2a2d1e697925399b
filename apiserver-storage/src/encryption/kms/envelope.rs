//! The envelope of a KMS v2 value, as upstream's `kmsv2` transformer writes it: the
//! [`EncryptedObject`] protobuf (the data, the plugin's key ID, the encrypted DEK source and
//! its type, the plugin's annotations), checked as upstream checks it, and the data's
//! encryption by a DEK source:
//!
//! - a seed (`HKDF_SHA256_XNONCE_AES_GCM_SEED`, what is written): a random 32-byte `info`,
//!   the key `HKDF-Expand(SHA-256, seed, info)` (32 bytes), then AES-256-GCM under that key
//!   with a random 12-byte nonce: `info`, nonce, ciphertext and tag;
//! - a key (`AES_GCM_KEY`, what older servers wrote; read only): AES-GCM under the DEK
//!   itself: nonce, ciphertext and tag.
//!
//! Both authenticate the value's storage key, so a value copied under another key does not
//! decrypt.

use aes_gcm::aead::{Aead, KeyInit, Payload};
use aes_gcm::{Aes256Gcm, Nonce};
use hkdf::Hkdf;
use prost::Message as _;
use sha2::Sha256;

use super::proto::{EncryptedDekSourceType, EncryptedObject};

/// The size of a seed, of each write's `info` and of the keys derived from them.
pub(super) const SEED_SIZE: usize = 32;
const NONCE_SIZE: usize = 12;
/// Upstream's bounds (`kmsv2.KeyIDMaxSize`, `encryptedDEKSourceMaxSize`, `annotationsMaxSize`).
const KEY_ID_MAX: usize = 1024;
const DEK_SOURCE_MAX: usize = 1024;
const ANNOTATIONS_MAX: usize = 32 * 1024;

/// A decrypted DEK source: what encrypts and decrypts values.
pub(super) enum Dek {
    /// A seed each write derives its key from.
    Seed(Vec<u8>),
    /// A key used directly (read only).
    Key(Vec<u8>),
}

impl Dek {
    /// `plain` sealed for the storage key `key` (a seed's layout: `info`, nonce, sealed).
    pub(super) fn seal(&self, key: &str, plain: &[u8]) -> Result<Vec<u8>, String> {
        let Dek::Seed(seed) = self else {
            return Err("a DEK that is not a seed is never written".into());
        };
        let info: [u8; SEED_SIZE] = rand::random();
        let nonce: [u8; NONCE_SIZE] = rand::random();
        let cipher = Aes256Gcm::new_from_slice(&derive(seed, &info)?).map_err(|e| e.to_string())?;
        let sealed = cipher
            .encrypt(
                &Nonce::from(nonce),
                Payload {
                    msg: plain,
                    aad: key.as_bytes(),
                },
            )
            .map_err(|_| "failed to encrypt with the derived key".to_string())?;
        let mut out = Vec::with_capacity(SEED_SIZE + NONCE_SIZE + sealed.len());
        out.extend_from_slice(&info);
        out.extend_from_slice(&nonce);
        out.extend(sealed);
        Ok(out)
    }

    /// The value `data` (as [`Dek::seal`] or upstream wrote it) holds, for the storage key
    /// `key`.
    pub(super) fn open(&self, key: &str, data: &[u8]) -> Result<Vec<u8>, String> {
        let (secret, data) = match self {
            Dek::Seed(seed) => {
                if data.len() < SEED_SIZE {
                    return Err("the stored data was shorter than the required size".into());
                }
                let (info, rest) = data.split_at(SEED_SIZE);
                (derive(seed, info)?, rest)
            }
            Dek::Key(dek) => (dek.clone(), data),
        };
        if data.len() < NONCE_SIZE {
            return Err("the stored data was shorter than the required size".into());
        }
        let (nonce, sealed) = data.split_at(NONCE_SIZE);
        let nonce = Nonce::try_from(nonce).map_err(|_| "a bad nonce")?;
        let opened = match secret.len() {
            32 => Aes256Gcm::new_from_slice(&secret)
                .map_err(|e| e.to_string())?
                .decrypt(
                    &nonce,
                    Payload {
                        msg: sealed,
                        aad: key.as_bytes(),
                    },
                ),
            16 => aes_gcm::Aes128Gcm::new_from_slice(&secret)
                .map_err(|e| e.to_string())?
                .decrypt(
                    &nonce,
                    Payload {
                        msg: sealed,
                        aad: key.as_bytes(),
                    },
                ),
            n => return Err(format!("crypto/aes: invalid key size {n}")),
        };
        opened.map_err(|_| "cipher: message authentication failed".into())
    }
}

/// `HKDF-Expand(SHA-256, seed, info)`, 32 bytes (upstream's `sha256KDFExpandOnly`).
fn derive(seed: &[u8], info: &[u8]) -> Result<Vec<u8>, String> {
    let kdf = Hkdf::<Sha256>::from_prk(seed)
        .map_err(|_| format!("invalid seed length {} used for key generation", seed.len()))?;
    let mut key = vec![0u8; SEED_SIZE];
    kdf.expand(info, &mut key)
        .map_err(|e| format!("failed to KDF expand seed with info: {e}"))?;
    Ok(key)
}

/// `object` as stored (after the prefix), checked first.
pub(super) fn encode(object: &EncryptedObject) -> Result<Vec<u8>, String> {
    validate(object)?;
    Ok(object.encode_to_vec())
}

/// The envelope `data` holds, checked.
pub(super) fn decode(data: &[u8]) -> Result<EncryptedObject, String> {
    let object = EncryptedObject::decode(data).map_err(|e| e.to_string())?;
    validate(&object)?;
    Ok(object)
}

/// Upstream's `ValidateEncryptedObject`, with its messages.
pub(super) fn validate(o: &EncryptedObject) -> Result<(), String> {
    if EncryptedDekSourceType::try_from(o.encrypted_dek_source_type).is_err() {
        return Err(format!(
            "unknown encryptedDEKSourceType: {}",
            o.encrypted_dek_source_type
        ));
    }
    if o.encrypted_data.is_empty() {
        return Err("encrypted data is empty".into());
    }
    if o.encrypted_dek_source.is_empty() {
        return Err(
            "failed to validate encrypted DEK source: encrypted DEK source is empty".into(),
        );
    }
    if o.encrypted_dek_source.len() > DEK_SOURCE_MAX {
        return Err(format!(
            "failed to validate encrypted DEK source: encrypted DEK source is {} bytes, which exceeds the max size of {DEK_SOURCE_MAX}",
            o.encrypted_dek_source.len()
        ));
    }
    validate_key_id(&o.key_id).map_err(|e| format!("failed to validate key id: {e}"))?;
    let size: usize = o.annotations.iter().map(|(k, v)| k.len() + v.len()).sum();
    if size > ANNOTATIONS_MAX {
        return Err(format!(
            "failed to validate annotations: total size of annotations is {size}, which exceeds the max size of {ANNOTATIONS_MAX}"
        ));
    }
    Ok(())
}

/// Upstream's `ValidateKeyID`.
pub(super) fn validate_key_id(key_id: &str) -> Result<(), String> {
    if key_id.is_empty() {
        return Err("keyID is empty".into());
    }
    if key_id.len() > KEY_ID_MAX {
        return Err(format!(
            "keyID is {} bytes, which exceeds the max size of {KEY_ID_MAX}",
            key_id.len()
        ));
    }
    Ok(())
}

/// The key of a decrypted DEK source in the cache, from what identifies it (upstream's
/// `generateCacheKey`: the type, the encrypted source, the key ID and the annotations, each
/// length-prefixed).
pub(super) fn cache_key(o: &EncryptedObject) -> Vec<u8> {
    let mut key = Vec::with_capacity(16 + o.encrypted_dek_source.len() + o.key_id.len());
    key.extend_from_slice(&(o.encrypted_dek_source_type as u32).to_be_bytes());
    let mut prefixed = |bytes: &[u8]| {
        key.extend_from_slice(&(bytes.len() as u16).to_be_bytes());
        key.extend_from_slice(bytes);
    };
    prefixed(&o.encrypted_dek_source);
    prefixed(o.key_id.as_bytes());
    if !o.annotations.is_empty() {
        key.extend_from_slice(&(o.annotations.len() as u32).to_be_bytes());
        // A BTreeMap: sorted by key already.
        for (k, v) in &o.annotations {
            key.extend_from_slice(&(k.len() as u16).to_be_bytes());
            key.extend_from_slice(k.as_bytes());
            key.extend_from_slice(&(v.len() as u16).to_be_bytes());
            key.extend_from_slice(v);
        }
    }
    key
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_seed_seals_with_a_fresh_derived_key_bound_to_the_storage_key() {
        let dek = Dek::Seed(vec![7; SEED_SIZE]);
        let a = dek.seal("/g/things/a", b"value").unwrap();
        let b = dek.seal("/g/things/a", b"value").unwrap();
        assert_ne!(
            a[..SEED_SIZE],
            b[..SEED_SIZE],
            "each write draws its own info"
        );
        assert_eq!(a.len(), SEED_SIZE + NONCE_SIZE + 5 + 16);
        assert_eq!(dek.open("/g/things/a", &a).unwrap(), b"value");
        assert!(
            dek.open("/g/things/b", &a).is_err(),
            "copied under another key"
        );
        assert!(
            Dek::Seed(vec![8; SEED_SIZE])
                .open("/g/things/a", &a)
                .is_err()
        );
    }

    #[test]
    fn envelopes_are_checked_as_upstream_checks_them() {
        let mut o = EncryptedObject {
            encrypted_data: vec![1],
            key_id: "k".into(),
            encrypted_dek_source: vec![2],
            annotations: Default::default(),
            encrypted_dek_source_type: EncryptedDekSourceType::HkdfSha256XnonceAesGcmSeed as i32,
        };
        let bytes = encode(&o).unwrap();
        assert_eq!(decode(&bytes).unwrap(), o);
        o.key_id.clear();
        assert_eq!(
            encode(&o).unwrap_err(),
            "failed to validate key id: keyID is empty"
        );
        o.key_id = "k".into();
        o.encrypted_dek_source_type = 7;
        assert_eq!(encode(&o).unwrap_err(), "unknown encryptedDEKSourceType: 7");
    }

    /// An envelope upstream wrote (k8s.io/apiserver v0.34.4: `proto.Marshal` of an
    /// `EncryptedObject` whose data `NewHKDFExtendedNonceGCMTransformer(seed 0x00..0x1f)`
    /// encrypted for the storage key below, key ID `key-1`, DEK source `09 09 09`, annotation
    /// `kms.example.com: v1`).
    const UPSTREAM_ENVELOPE: &str = "0a4e081079ca507bf03bc4c1d4465816436021514ce2f2eabe05a267c04d59a82ea218129be4cd6a152c454113dae490ea21b87f3baceeeb2ff8e3e26b21d69c4bb114bfec04c906bfe5a35d1eb2f75e12056b65792d311a0309090922150a0f6b6d732e6578616d706c652e636f6d120276312801";

    #[test]
    fn an_envelope_upstream_wrote_decodes_and_its_data_opens() {
        let bytes: Vec<u8> = (0..UPSTREAM_ENVELOPE.len())
            .step_by(2)
            .map(|i| u8::from_str_radix(&UPSTREAM_ENVELOPE[i..i + 2], 16).unwrap())
            .collect();
        let o = decode(&bytes).unwrap();
        assert_eq!(o.key_id, "key-1");
        assert_eq!(o.encrypted_dek_source, [9, 9, 9]);
        assert_eq!(o.annotations["kms.example.com"], b"v1");
        assert_eq!(
            o.encrypted_dek_source_type,
            EncryptedDekSourceType::HkdfSha256XnonceAesGcmSeed as i32
        );
        let seed = Dek::Seed((0..32).collect());
        let plain = seed
            .open("/wardle.example.com/flunders/default/a", &o.encrypted_data)
            .unwrap();
        assert_eq!(plain, br#"{"kind":"Flunder"}"#);
        // What we write decodes the same way, upstream's field numbers and all.
        assert_eq!(o.encode_to_vec().len(), bytes.len());
    }
}
