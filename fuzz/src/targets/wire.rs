//! The etcd v3 API's protobuf responses, as the etcd backend decodes them from the wire.

use apiserver_framework::storage::etcd::proto::{
    RangeResponse, StatusResponse, TxnResponse, WatchResponse,
};
use prost::Message;

/// Decodes `data` as `M`; a decoded message encodes to bytes that decode to the same message.
fn round_trip<M: Message + Default + PartialEq + std::fmt::Debug>(data: &[u8]) {
    if let Ok(message) = M::decode(data) {
        let encoded = message.encode_to_vec();
        let again = M::decode(encoded.as_slice()).expect("an encoded message decodes");
        assert_eq!(again, message);
    }
}

/// Range, transaction, watch and status responses from arbitrary bytes.
pub fn etcd_wire(data: &[u8]) {
    round_trip::<RangeResponse>(data);
    round_trip::<TxnResponse>(data);
    round_trip::<WatchResponse>(data);
    round_trip::<StatusResponse>(data);
}
