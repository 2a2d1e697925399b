//! Reading what a list answered.

use serde_json::Value;

/// The names of the items of `list` (a `*List` as JSON), in its order; panics on an item
/// without a name.
pub fn item_names(list: &Value) -> Vec<&str> {
    list["items"]
        .as_array()
        .map(Vec::as_slice)
        .unwrap_or_default()
        .iter()
        .map(|i| i["metadata"]["name"].as_str().expect("an item with a name"))
        .collect()
}
