//! What the watch caches' typed objects share (`Rollout`, `ExternalSecret`, `Application`): their
//! `kube::Resource` from the kind Tower watches them as, and a spec kept as the JSON text the API server sent
//! with the few fields read out — a `serde_json::Value` tree would cost a B-tree node per map. The pipeline
//! caches keep what only a run's page reads the same way ([`Packed`]).

use std::ops::Deref;

use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use kube::api::{DynamicObject, TypeMeta};
use serde::de::DeserializeOwned;
use serde::{Deserialize, Deserializer, Serialize, Serializer};
use serde_json::Value;

use super::watched::WatchedKind;

/// Implements `kube::Resource` for `$type` (namespaced, with a `metadata: ObjectMeta` field) as the
/// [`WatchedKind`] `$kind` names it.
macro_rules! watched_resource {
    ($type:ty, $kind:expr) => {
        impl kube::Resource for $type {
            type DynamicType = ();
            type Scope = k8s_openapi::NamespaceResourceScope;

            fn kind((): &()) -> std::borrow::Cow<'_, str> {
                $kind.kind.into()
            }

            fn group((): &()) -> std::borrow::Cow<'_, str> {
                $kind.group.into()
            }

            fn version((): &()) -> std::borrow::Cow<'_, str> {
                $kind.version.into()
            }

            fn plural((): &()) -> std::borrow::Cow<'_, str> {
                $kind.resource.into()
            }

            fn meta(&self) -> &k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta {
                &self.metadata
            }

            fn meta_mut(
                &mut self,
            ) -> &mut k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta {
                &mut self.metadata
            }
        }
    };
}

pub(crate) use watched_resource;

/// The fields of a spec a view reads on every recompute, read out once when the object arrives.
pub trait ReadOut: Default {
    /// Reads them from the whole spec.
    fn read_out(spec: &Value) -> Self;
}

/// A `T` kept as its compact JSON text until it is read whole (per request, for the few objects a page
/// shows): one allocation instead of a tree of them.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Packed<T> {
    json: Box<str>,
    packed: std::marker::PhantomData<T>,
}

impl<T: Serialize + DeserializeOwned + Default> Packed<T> {
    /// Packs `value`.
    pub fn new(value: &T) -> Self {
        Self {
            // Our own types and JSON values serialize without failing; were one not to, it would read back
            // as the default.
            json: serde_json::to_string(value)
                .unwrap_or_default()
                .into_boxed_str(),
            packed: std::marker::PhantomData,
        }
    }

    /// The value, unpacked.
    pub fn unpack(&self) -> T {
        serde_json::from_str(&self.json).unwrap_or_default()
    }
}

/// A spec: the JSON text as the API server sent it (the Config tab shows it whole), and `F`, what is read
/// of it. Derefs to `F`.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct SpecText<F> {
    read: F,
    json: Packed<Value>,
}

impl<F> SpecText<F> {
    /// The whole spec as JSON (`null` when there was none).
    pub fn to_value(&self) -> Value {
        self.json.unpack()
    }
}

impl<F> Deref for SpecText<F> {
    type Target = F;

    fn deref(&self) -> &F {
        &self.read
    }
}

impl<'de, F: ReadOut> Deserialize<'de> for SpecText<F> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let spec = Value::deserialize(deserializer)?;
        Ok(Self {
            read: F::read_out(&spec),
            json: Packed::new(&spec),
        })
    }
}

impl<F> Serialize for SpecText<F> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        self.to_value().serialize(serializer)
    }
}

/// An object of `kind` as a `DynamicObject`, for the Config tab's read-only view of what runs (built per
/// request, for one service's few objects).
pub fn dynamic(
    kind: &WatchedKind,
    metadata: &ObjectMeta,
    spec: Value,
    status: &impl Serialize,
) -> DynamicObject {
    DynamicObject {
        types: Some(TypeMeta {
            api_version: format!("{}/{}", kind.group, kind.version),
            kind: kind.kind.to_string(),
        }),
        metadata: metadata.clone(),
        data: serde_json::json!({ "spec": spec, "status": status }),
    }
}
