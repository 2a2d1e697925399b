//! Why a strategic merge patch was refused.

/// Why a strategic merge patch could not be applied.
///
/// Messages keep the wording that Kubernetes API servers answer with, so clients that print them
/// (or scripts that match them) see what they know. [`StrategicPatchError::is_bad_request`] tells
/// a malformed patch document (HTTP 400) from a well-formed one that cannot apply to the object
/// (HTTP 422).
#[derive(Debug, thiserror::Error)]
pub enum StrategicPatchError {
    /// The patch document is neither a JSON object nor `null`.
    #[error("json: cannot unmarshal {found} into Go value of type map[string]interface {{}}")]
    PatchNotAnObject {
        /// The JSON type the patch has instead (`array`, `string`, `number` or `bool`).
        found: &'static str,
    },
    /// The object to patch is neither a JSON object nor `null`.
    #[error("the object to patch is not a JSON object, it is a JSON {found}")]
    OriginalNotAnObject {
        /// The JSON type the object has instead.
        found: &'static str,
    },
    /// A `$patch` directive whose value is not `replace`, `merge` or `delete`.
    #[error("unknown patch type: {value} in map: {map}")]
    UnknownPatchType {
        /// The value of `$patch`.
        value: String,
        /// The map holding the directive.
        map: String,
    },
    /// A `{"$patch": "merge"}` element in a list that merges by key.
    #[error("merging lists cannot yet be specified in the patch")]
    MergeDirectiveInList,
    /// `$retainKeys` is not a list of strings, or the patch sets a key it does not list.
    #[error("invalid patch format of retainKeys")]
    BadRetainKeys,
    /// A `$deleteFromPrimitiveList` key without `/<field>`, or a value that is not a list.
    #[error("invalid patch format of primitive list")]
    BadDeleteFromPrimitiveList,
    /// A `$setElementOrder` key without `/<field>`.
    #[error("invalid patch format of setElementOrder list")]
    BadSetElementOrder,
    /// The patch list names its elements in another order than its `$setElementOrder` list, or
    /// names an element that list lacks.
    #[error("The order in patch list:\n{patch}\n doesn't match $setElementOrder list:\n{order}\n")]
    SetElementOrderMismatch {
        /// The patch list.
        patch: String,
        /// The `$setElementOrder` list.
        order: String,
    },
    /// A map in a list that merges by key lacks that key.
    #[error("map: {element} does not contain declared merge key: {key}")]
    MissingMergeKey {
        /// The map without the key.
        element: String,
        /// The merge key.
        key: String,
        /// Whether the map is part of the patch (else it is part of the object).
        in_patch: bool,
    },
    /// A list declared as merging holds maps, but the schema names no merge key for it.
    #[error("cannot merge lists without merge key for {schema}")]
    NoMergeKey {
        /// The type of the list's elements, as the schema gives it.
        schema: String,
    },
    /// A merging list whose elements are lists.
    #[error("lists of lists are not supported")]
    ListOfLists,
    /// A merging list (object and patch together) whose elements are not all of one JSON type.
    #[error("list element types are not identical: {lists}")]
    MixedListElements {
        /// The object's list and the patch's list.
        lists: String,
    },
    /// A value of one JSON type where a directive needs another.
    #[error("expected a {expected}, but received a {received}")]
    TypeMismatch {
        /// The type needed.
        expected: &'static str,
        /// The type found.
        received: &'static str,
        /// Whether the value is part of the patch (else it is part of the object).
        in_patch: bool,
    },
    /// Object and patch both hold a map where the schema declares another type.
    #[error("merging an object in json but data type is not struct, instead is: {schema_type}")]
    NotAnObjectField {
        /// The type the schema declares.
        schema_type: String,
    },
    /// Object and patch both hold a list where the schema declares another type.
    #[error("expected slice or array type, but got: {schema_type}")]
    NotAListField {
        /// The type the schema declares.
        schema_type: String,
    },
}

impl StrategicPatchError {
    /// Whether the patch document itself is malformed, which is answered with 400 Bad Request;
    /// `false` means a well-formed patch that cannot apply to this object (422).
    pub fn is_bad_request(&self) -> bool {
        match self {
            StrategicPatchError::PatchNotAnObject { .. }
            | StrategicPatchError::UnknownPatchType { .. }
            | StrategicPatchError::MergeDirectiveInList
            | StrategicPatchError::BadRetainKeys
            | StrategicPatchError::BadDeleteFromPrimitiveList
            | StrategicPatchError::BadSetElementOrder
            | StrategicPatchError::SetElementOrderMismatch { .. } => true,
            StrategicPatchError::MissingMergeKey { in_patch, .. }
            | StrategicPatchError::TypeMismatch { in_patch, .. } => *in_patch,
            StrategicPatchError::OriginalNotAnObject { .. }
            | StrategicPatchError::NoMergeKey { .. }
            | StrategicPatchError::ListOfLists
            | StrategicPatchError::MixedListElements { .. }
            | StrategicPatchError::NotAnObjectField { .. }
            | StrategicPatchError::NotAListField { .. } => false,
        }
    }
}
