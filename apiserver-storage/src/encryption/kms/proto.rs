//! The KMS v2 messages, written by hand as `prost` messages: the plugin API of
//! `k8s.io/kms/apis/v2/api.proto` (service `v2.KeyManagementService`) and the stored envelope
//! of `k8s.io/apiserver/pkg/storage/value/encrypt/envelope/kmsv2/v2/api.proto`
//! (`v2.EncryptedObject`).
//!
//! Declared with prost's derive rather than generated: generating them needs `protoc` on the
//! building machine, and building the framework needs nothing but cargo (as the etcd client's
//! messages, `etcd::proto`). Field numbers and types are upstream's.

use std::collections::BTreeMap;

/// `v2.StatusRequest`: empty.
#[derive(Clone, PartialEq, prost::Message)]
pub struct StatusRequest {}

/// `v2.StatusResponse`.
#[derive(Clone, PartialEq, prost::Message)]
pub struct StatusResponse {
    /// The plugin's API version: `v2` (or the equivalent `v2beta1`).
    #[prost(string, tag = "1")]
    pub version: String,
    /// `ok`, or why the plugin is not healthy.
    #[prost(string, tag = "2")]
    pub healthz: String,
    /// The key the plugin encrypts with now.
    #[prost(string, tag = "3")]
    pub key_id: String,
}

/// `v2.DecryptRequest`.
#[derive(Clone, PartialEq, prost::Message)]
pub struct DecryptRequest {
    /// The encrypted DEK source.
    #[prost(bytes = "vec", tag = "1")]
    pub ciphertext: Vec<u8>,
    /// A unique identifier of the request.
    #[prost(string, tag = "2")]
    pub uid: String,
    /// The key the plugin encrypted it with.
    #[prost(string, tag = "3")]
    pub key_id: String,
    /// The annotations the plugin returned with it.
    #[prost(btree_map = "string, bytes", tag = "4")]
    pub annotations: BTreeMap<String, Vec<u8>>,
}

/// `v2.DecryptResponse`.
#[derive(Clone, PartialEq, prost::Message)]
pub struct DecryptResponse {
    /// The DEK source.
    #[prost(bytes = "vec", tag = "1")]
    pub plaintext: Vec<u8>,
}

/// `v2.EncryptRequest`.
#[derive(Clone, PartialEq, prost::Message)]
pub struct EncryptRequest {
    /// The DEK source.
    #[prost(bytes = "vec", tag = "1")]
    pub plaintext: Vec<u8>,
    /// A unique identifier of the request.
    #[prost(string, tag = "2")]
    pub uid: String,
}

/// `v2.EncryptResponse`.
#[derive(Clone, PartialEq, prost::Message)]
pub struct EncryptResponse {
    /// The encrypted DEK source.
    #[prost(bytes = "vec", tag = "1")]
    pub ciphertext: Vec<u8>,
    /// The key the plugin encrypted it with.
    #[prost(string, tag = "2")]
    pub key_id: String,
    /// Plugin data stored beside it (in plain text).
    #[prost(btree_map = "string, bytes", tag = "3")]
    pub annotations: BTreeMap<String, Vec<u8>>,
}

/// `v2.EncryptedDEKSourceType`: what the plugin encrypted.
#[derive(Clone, Copy, Debug, PartialEq, Eq, prost::Enumeration)]
#[repr(i32)]
pub enum EncryptedDekSourceType {
    /// A DEK used directly with AES-GCM.
    AesGcmKey = 0,
    /// A seed from which each write's key is derived with HKDF-SHA256 (what upstream writes
    /// since Kubernetes 1.29, and what this one writes).
    HkdfSha256XnonceAesGcmSeed = 1,
}

/// `v2.EncryptedObject`: what is stored after the `k8s:enc:kms:v2:<name>:` prefix.
#[derive(Clone, PartialEq, prost::Message)]
pub struct EncryptedObject {
    /// The value, encrypted with the DEK (or a key derived from the seed).
    #[prost(bytes = "vec", tag = "1")]
    pub encrypted_data: Vec<u8>,
    /// The plugin's key that encrypted the DEK source.
    #[prost(string, tag = "2")]
    pub key_id: String,
    /// The DEK source, encrypted by the plugin.
    #[prost(bytes = "vec", tag = "3")]
    pub encrypted_dek_source: Vec<u8>,
    /// The plugin's annotations.
    #[prost(btree_map = "string, bytes", tag = "4")]
    pub annotations: BTreeMap<String, Vec<u8>>,
    /// What the DEK source is: an [`EncryptedDekSourceType`].
    #[prost(enumeration = "EncryptedDekSourceType", tag = "5")]
    pub encrypted_dek_source_type: i32,
}
