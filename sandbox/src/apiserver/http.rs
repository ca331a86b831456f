//! The HTTP surface: one handler that parses Kubernetes API paths for every cluster.
//!
//! Paths are parsed by hand rather than by route patterns because Kubernetes paths are ambiguous
//! by shape: `/api/v1/namespaces/x/status` is a namespace's status subresource while
//! `/api/v1/namespaces/x/pods` is a collection, and only the registry can tell them apart.

use std::collections::HashMap;
use std::time::Duration;

use axum::Json;
use axum::Router;
use axum::body::Bytes;
use axum::extract::{Path, Query, State};
use axum::http::{HeaderMap, Method, StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::any;
use serde_json::{Value, json};

use super::discovery::{self, StatusField};
use super::error::{Cause, Result, StoreError};
use super::logs::{self, LogQuery};
use super::selector::{FieldSelector, LabelSelector, Selection};
use super::store::{ClusterStore, Write, metadata, qualified_kind};
use super::watch::{self, WatchQuery};
use super::{Clusters, ResourceType};

/// Query parameters, last value wins.
type Params = HashMap<String, String>;

pub(crate) fn router(clusters: Clusters) -> Router {
    Router::new()
        .route("/clusters/{cluster}/{*rest}", any(dispatch))
        .with_state(clusters)
}

async fn dispatch(
    State(clusters): State<Clusters>,
    Path((cluster, rest)): Path<(String, String)>,
    method: Method,
    Query(params): Query<Params>,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    let Some(store) = clusters.cluster(&cluster) else {
        return StoreError::NotFound {
            resource: "clusters".into(),
            name: cluster,
        }
        .into_response();
    };
    store.count_request();
    if !store.is_reachable() {
        // 502, as the load balancer in front of a dead apiserver answers (clients retry 503 silently).
        return (
            StatusCode::BAD_GATEWAY,
            Json(json!({
                "kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
                "message": format!("cluster {cluster} is unreachable"), "reason": "ServiceUnavailable", "code": 502
            })),
        )
            .into_response();
    }
    let request = Request {
        store: &store,
        method: &method,
        params: &params,
        headers: &headers,
        body: &body,
    };
    request
        .route(&rest)
        .unwrap_or_else(IntoResponse::into_response)
}

fn unknown_path() -> StoreError {
    StoreError::UnknownType {
        what: "no such path".into(),
    }
}

/// Everything one request carries, so handlers don't take seven arguments.
struct Request<'a> {
    store: &'a ClusterStore,
    method: &'a Method,
    params: &'a Params,
    headers: &'a HeaderMap,
    body: &'a Bytes,
}

/// The object or collection a resource path names.
struct Target<'p> {
    ty: usize,
    namespace: Option<&'p str>,
    name: Option<&'p str>,
    subresource: Option<&'p str>,
}

impl Request<'_> {
    fn route(&self, path: &str) -> Result<Response> {
        let segments: Vec<&str> = path.split('/').filter(|s| !s.is_empty()).collect();
        let registry = self.store.registry();
        let document = match segments.as_slice() {
            ["version"] => Some(discovery::version()),
            ["api"] => Some(discovery::api_versions()),
            ["apis"] => Some(discovery::group_list(registry)),
            ["api", "v1"] => discovery::resource_list(registry, "", "v1"),
            ["apis", group] => discovery::group(registry, group),
            ["apis", group, version] => discovery::resource_list(registry, group, version),
            ["api", "v1", rest @ ..] => return self.resource(self.target("", "v1", rest)?),
            ["apis", group, version, rest @ ..] => {
                return self.resource(self.target(group, version, rest)?);
            }
            _ => None,
        };
        // A path no API serves answers the mux's plain `404 page not found`, as a real apiserver's does
        // (see `StoreError`'s response).
        document
            .map(|d| Json(d).into_response())
            .ok_or_else(unknown_path)
    }

    fn target<'p>(&self, group: &str, version: &str, rest: &[&'p str]) -> Result<Target<'p>> {
        let registry = self.store.registry();
        let namespaced_plural = |plural: &str| {
            registry
                .by_plural(group, version, plural)
                .is_some_and(|ty| registry.get(ty).namespaced)
        };
        let (namespace, rest) = match rest {
            ["namespaces", namespace, plural, ..] if namespaced_plural(plural) => {
                (Some(*namespace), &rest[2..])
            }
            _ => (None, rest),
        };
        let (plural, name, subresource) = match rest {
            [plural] => (*plural, None, None),
            [plural, name] => (*plural, Some(*name), None),
            [plural, name, sub] => (*plural, Some(*name), Some(*sub)),
            _ => return Err(unknown_path()),
        };
        let ty =
            registry
                .by_plural(group, version, plural)
                .ok_or_else(|| StoreError::NotServed {
                    what: format!(
                        "no resource \"{plural}\" in group version \"{}\"",
                        [group, version].join("/")
                    ),
                })?;
        // A namespaced object is only addressable inside its namespace; its collection also across all.
        if registry.get(ty).namespaced && namespace.is_none() && name.is_some() {
            return Err(unknown_path());
        }
        Ok(Target {
            ty,
            namespace,
            name,
            subresource,
        })
    }

    fn resource(&self, target: Target<'_>) -> Result<Response> {
        let Target {
            ty,
            namespace,
            name,
            subresource,
        } = target;
        let store = self.store;
        let rt = store.registry().get(ty);
        let status = discovery::status_field(rt);
        let Some(name) = name else {
            return match *self.method {
                Method::GET if self.flag("watch") => Ok(watch::respond(
                    store,
                    ty,
                    self.selection(ty, namespace)?,
                    self.watch_query()?,
                )),
                Method::GET => self.list(ty, self.selection(ty, namespace)?),
                Method::POST => {
                    // A create leaves status to the controller where it has a subresource of its own,
                    // and drops it where the type has none.
                    let write = if status == StatusField::Plain {
                        Write::Whole
                    } else {
                        Write::KeepStatus
                    };
                    let created = store.create_at(ty, namespace, self.json_body()?, write)?;
                    Ok((StatusCode::CREATED, Json(created)).into_response())
                }
                // Namespaces are deleted one by one, never as a collection.
                Method::DELETE if !is_core(rt, "Namespace") => {
                    self.delete_collection(ty, self.selection(ty, namespace)?)
                }
                _ => Err(StoreError::MethodNotAllowed),
            };
        };
        let namespace = namespace.unwrap_or_default();
        let write = match subresource {
            // Without a status subresource, status may be a field like the others.
            None if status == StatusField::Plain => Write::Whole,
            None => Write::KeepStatus,
            Some("status") if status == StatusField::Subresource => Write::StatusOnly,
            Some("log")
                if rt.group.is_empty() && rt.kind == "Pod" && *self.method == Method::GET =>
            {
                return logs::respond(store, ty, namespace, name, self.log_query()?);
            }
            Some(_) => return Err(unknown_path()),
        };
        let object = match *self.method {
            Method::GET => {
                store
                    .get_at(ty, Some(namespace), name)
                    .ok_or_else(|| StoreError::NotFound {
                        resource: rt.resource_name(),
                        name: name.to_owned(),
                    })?
            }
            Method::PUT => {
                let body = self.json_body()?;
                store.update_at(ty, namespace, name, write, true, |_| Ok(body))?
            }
            Method::PATCH => self.patch(ty, namespace, name, write)?,
            Method::DELETE if subresource.is_none() => {
                let deleted = store.delete_at(ty, Some(namespace), name)?;
                if !answers_delete_with_object(rt) {
                    return Ok(Json(deleted_status(rt, &deleted)).into_response());
                }
                deleted
            }
            _ => return Err(StoreError::MethodNotAllowed),
        };
        Ok(Json(object).into_response())
    }

    fn patch(&self, ty: usize, namespace: &str, name: &str, write: Write) -> Result<Value> {
        let store = self.store;
        let content_type = self
            .headers
            .get(header::CONTENT_TYPE)
            .and_then(|v| v.to_str().ok())
            .and_then(|v| v.split(';').next())
            .unwrap_or_default()
            .trim();
        match content_type {
            // Strategic merge needs per-field merge keys from Go structs; a merge patch is close
            // enough for what Tower sends (maps and whole lists).
            "application/merge-patch+json" | "application/strategic-merge-patch+json" => {
                let patch = self.json_body()?;
                store.update_at(ty, namespace, name, write, true, |current| {
                    let mut object = current.clone();
                    json_patch::merge(&mut object, &patch);
                    Ok(object)
                })
            }
            "application/json-patch+json" => {
                let patch: json_patch::Patch = serde_json::from_value(self.json_body()?)
                    .map_err(|e| StoreError::BadRequest(format!("invalid JSON patch: {e}")))?;
                store.update_at(ty, namespace, name, write, true, |current| {
                    let mut object = current.clone();
                    json_patch::patch(&mut object, &patch).map_err(|e| StoreError::Invalid {
                        kind: qualified_kind(store.registry().get(ty)),
                        name: name.to_owned(),
                        causes: vec![Cause {
                            reason: "FieldValueInvalid",
                            field: String::new(),
                            message: e.to_string(),
                        }],
                    })?;
                    Ok(object)
                })
            }
            // Server-side apply without field ownership: create, or merge the applied fields in.
            "application/apply-patch+yaml" | "application/apply-patch+json" => {
                let mut applied = self.json_body()?;
                metadata(&mut applied).insert("name".into(), json!(name));
                if write == Write::StatusOnly {
                    return store.update_at(ty, namespace, name, write, false, |current| {
                        let mut object = current.clone();
                        json_patch::merge(&mut object, &applied);
                        Ok(object)
                    });
                }
                store.upsert_at(ty, namespace, name, write, |current| match current {
                    Some(current) => {
                        let mut object = current.clone();
                        json_patch::merge(&mut object, &applied);
                        Ok(object)
                    }
                    None => Ok(applied),
                })
            }
            _ => Err(StoreError::UnsupportedMediaType),
        }
    }

    fn list(&self, ty: usize, selection: Selection) -> Result<Response> {
        let store = self.store;
        let rt = store.registry().get(ty);
        let version = self.list_version()?;
        let limit = match self.number("limit")? {
            // A real apiserver answers `resourceVersion=0` from its watch cache, whole, whatever the limit.
            _ if version == ListVersion::Any => usize::MAX,
            Some(0) | None => usize::MAX,
            Some(n) => usize::try_from(n).unwrap_or(usize::MAX),
        };
        let token = match self.params.get("continue").filter(|t| !t.is_empty()) {
            Some(token) => Some(ContinueToken::decode(token)?),
            None => None,
        };
        if let Some(token) = &token {
            store.check_resumable(token.resource_version).map_err(|_| {
                StoreError::Expired(
                    "The provided continue parameter is too old to display a consistent list result. You can start a new list without the continue parameter.".into(),
                )
            })?;
        }
        // Later pages list the first page's version, so the pages add up to one consistent list and a watch
        // started from it misses nothing.
        let at = match (&token, version) {
            (Some(token), _) => Some(token.resource_version),
            (None, ListVersion::Exact(version)) => Some(version),
            (None, ListVersion::Latest | ListVersion::Any) => None,
        };
        // Selected lists are filtered page by page, so a real apiserver cannot count what remains. Unselected
        // ones count the rest once, on their first page, and carry the count in the token: counting on
        // every page made a paged list of n objects cost n²/limit.
        let counted = !selection.has_selectors();
        let known = token.as_ref().and_then(|t| t.remaining);
        let page = store.list_page(
            ty,
            selection.namespace.as_deref(),
            token
                .as_ref()
                .map(|t| (t.namespace.clone(), t.name.clone())),
            limit,
            at,
            counted && known.is_none(),
            |key, object| selection.matches_stored(key, object),
        )?;
        let resource_version = page.resource_version;
        let remaining = page
            .remaining
            .or_else(|| known.map(|known| known.saturating_sub(page.items.len())));
        let mut list_meta = json!({"resourceVersion": resource_version.to_string()});
        if page.more
            && let Some((namespace, name)) = page.last
        {
            list_meta["continue"] = json!(
                ContinueToken {
                    resource_version,
                    namespace,
                    name,
                    remaining,
                }
                .encode()
            );
            if let Some(remaining) = remaining.filter(|_| counted) {
                list_meta["remainingItemCount"] = json!(remaining);
            }
        }
        if self.metadata_only() {
            let items: Vec<Value> = page
                .items
                .iter()
                .map(|object| watch::partial_metadata(&object.tree()))
                .collect();
            return Ok(Json(json!({
                "apiVersion": "meta.k8s.io/v1",
                "kind": "PartialObjectMetadataList",
                "metadata": list_meta,
                "items": items,
            }))
            .into_response());
        }
        // The items go out as stored, without a tree built for them only to be written again.
        let head = json!({
            "apiVersion": rt.api_version(),
            "kind": format!("{}List", rt.kind),
            "metadata": list_meta,
        })
        .to_string();
        let head = head.strip_suffix('}').unwrap_or(&head);
        let size = page.items.iter().map(|o| o.json().len() + 1).sum::<usize>();
        let mut body = Vec::with_capacity(head.len() + size + 16);
        body.extend_from_slice(head.as_bytes());
        body.extend_from_slice(b",\"items\":[");
        for (index, object) in page.items.iter().enumerate() {
            if index > 0 {
                body.push(b',');
            }
            body.extend_from_slice(object.json());
        }
        body.extend_from_slice(b"]}");
        Ok(([(header::CONTENT_TYPE, "application/json")], body).into_response())
    }

    fn delete_collection(&self, ty: usize, selection: Selection) -> Result<Response> {
        let store = self.store;
        let rt = store.registry().get(ty);
        let (objects, _) = store.stored_at(ty, selection.namespace.as_deref());
        let mut deleted = Vec::new();
        let doomed = objects
            .into_iter()
            .filter(|(key, object)| selection.matches_stored(key, object))
            .map(|(key, _)| key);
        for (namespace, name) in doomed {
            match store.delete_at(ty, Some(&namespace), &name) {
                Ok(object) => deleted.push(object),
                // Deleted meanwhile by someone else: the goal is reached all the same.
                Err(StoreError::NotFound { .. }) => {}
                Err(err) => return Err(err),
            }
        }
        let resource_version = store.current_resource_version().to_string();
        Ok(Json(json!({
            "apiVersion": rt.api_version(),
            "kind": format!("{}List", rt.kind),
            "metadata": {"resourceVersion": resource_version},
            "items": deleted,
        }))
        .into_response())
    }

    /// The version a list reads, from `resourceVersion` and `resourceVersionMatch`, refused as a real
    /// apiserver refuses their invalid combinations (`422` on `ListOptions`).
    fn list_version(&self) -> Result<ListVersion> {
        let param = |name: &str| {
            self.params
                .get(name)
                .map(String::as_str)
                .unwrap_or_default()
        };
        let (version, matching) = (param("resourceVersion"), param("resourceVersionMatch"));
        let continued = !param("continue").is_empty();
        let forbidden = |field: &str, why: &str| Cause {
            reason: "FieldValueForbidden",
            field: field.into(),
            message: format!("Forbidden: {why}"),
        };
        let mut causes = Vec::new();
        if !matching.is_empty() {
            if version.is_empty() {
                causes.push(forbidden(
                    "resourceVersionMatch",
                    "resourceVersionMatch is forbidden unless resourceVersion is provided",
                ));
            }
            if continued {
                causes.push(forbidden(
                    "resourceVersionMatch",
                    "resourceVersionMatch is forbidden when continue is provided",
                ));
            }
            if !matches!(matching, "Exact" | "NotOlderThan") {
                causes.push(Cause {
                    reason: "FieldValueNotSupported",
                    field: "resourceVersionMatch".into(),
                    message: format!(
                        "Unsupported value: \"{matching}\": supported values: \"Exact\", \"NotOlderThan\", \"\""
                    ),
                });
            }
            if matching == "Exact" && version == "0" {
                causes.push(forbidden(
                    "resourceVersionMatch",
                    "resourceVersionMatch \"exact\" is forbidden for resourceVersion \"0\"",
                ));
            }
        }
        if self.params.contains_key("sendInitialEvents") {
            causes.push(forbidden(
                "sendInitialEvents",
                "sendInitialEvents is forbidden for list",
            ));
        }
        if !causes.is_empty() {
            return Err(StoreError::Invalid {
                kind: "ListOptions.meta.k8s.io".into(),
                name: String::new(),
                causes,
            });
        }
        if continued && !version.is_empty() {
            return Err(StoreError::BadRequest(
                "specifying resource version is not allowed when using continue".into(),
            ));
        }
        Ok(match version {
            "" => ListVersion::Latest,
            "0" => ListVersion::Any,
            version => {
                let version = version.parse().map_err(|_| {
                    StoreError::BadRequest(format!("invalid resource version \"{version}\""))
                })?;
                if matching == "Exact" {
                    ListVersion::Exact(version)
                } else {
                    // Not older than a version this server has reached: the latest is.
                    ListVersion::Latest
                }
            }
        })
    }

    fn json_body(&self) -> Result<Value> {
        serde_json::from_slice(self.body).map_err(|e| {
            StoreError::BadRequest(format!(
                "the request body is not valid JSON (YAML is not supported here): {e}"
            ))
        })
    }

    fn flag(&self, name: &str) -> bool {
        matches!(
            self.params.get(name).map(String::as_str),
            Some("true" | "1")
        )
    }

    fn number(&self, name: &str) -> Result<Option<i64>> {
        match self.params.get(name).filter(|v| !v.is_empty()) {
            None => Ok(None),
            Some(v) => v.parse().map(Some).map_err(|_| {
                StoreError::BadRequest(format!("{name}: expected an integer, got \"{v}\""))
            }),
        }
    }

    fn selection(&self, ty: usize, namespace: Option<&str>) -> Result<Selection> {
        let text = |name: &str| {
            self.params
                .get(name)
                .map(String::as_str)
                .unwrap_or_default()
        };
        let fields = FieldSelector::parse(text("fieldSelector"))?;
        let rt = self.store.registry().get(ty);
        if let Some(field) = fields.unsupported(&rt.group, &rt.kind) {
            return Err(StoreError::BadRequest(format!(
                "field label not supported: {field}"
            )));
        }
        Ok(Selection {
            namespace: namespace.map(str::to_owned),
            labels: LabelSelector::parse(text("labelSelector"))?,
            fields,
        })
    }

    /// Whether the client asked for metadata only (`Accept: application/json;as=PartialObjectMetadataList;…`
    /// for a list, `…;as=PartialObjectMetadata;…` for a watch), as kube-rs's metadata watcher does.
    fn metadata_only(&self) -> bool {
        self.headers
            .get_all(header::ACCEPT)
            .iter()
            .filter_map(|v| v.to_str().ok())
            .any(|accept| accept.contains("as=PartialObjectMetadata"))
    }

    fn watch_query(&self) -> Result<WatchQuery> {
        let after = match self.params.get("resourceVersion").map(String::as_str) {
            None | Some("" | "0") => None,
            Some(rv) => Some(rv.parse().map_err(|_| {
                StoreError::BadRequest(format!("invalid resource version \"{rv}\""))
            })?),
        };
        let timeout = self
            .number("timeoutSeconds")?
            .map(|s| Duration::from_secs(s.max(0).unsigned_abs()));
        Ok(WatchQuery {
            after,
            send_initial_events: self.flag("sendInitialEvents"),
            bookmarks: self.flag("allowWatchBookmarks"),
            timeout,
            metadata_only: self.metadata_only(),
        })
    }

    fn log_query(&self) -> Result<LogQuery> {
        let since_time = match self.params.get("sinceTime").filter(|v| !v.is_empty()) {
            Some(v) => Some(v.parse().map_err(|_| {
                StoreError::BadRequest(format!("sinceTime: invalid RFC 3339 time \"{v}\""))
            })?),
            None => None,
        };
        Ok(LogQuery {
            container: self
                .params
                .get("container")
                .filter(|c| !c.is_empty())
                .cloned(),
            follow: self.flag("follow"),
            previous: self.flag("previous"),
            timestamps: self.flag("timestamps"),
            tail_lines: self
                .number("tailLines")?
                .map(|n| usize::try_from(n).unwrap_or(0)),
            since_seconds: self.number("sinceSeconds")?,
            since_time,
        })
    }
}

/// Which version of the objects a list reads.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum ListVersion {
    /// The latest: no `resourceVersion`, or one not older than a version this server has reached.
    Latest,
    /// `resourceVersion=0`: any version will do.
    Any,
    /// `resourceVersionMatch=Exact`: the objects as they were at this version.
    Exact(u64),
}

/// Where a list page ended, and the version the list is consistent with; opaque to clients.
#[derive(serde::Serialize, serde::Deserialize)]
struct ContinueToken {
    #[serde(rename = "rv")]
    resource_version: u64,
    #[serde(rename = "ns")]
    namespace: String,
    name: String,
    /// Objects after this page, counted on the first page of an unselected list, so later pages need not.
    #[serde(rename = "left", default, skip_serializing_if = "Option::is_none")]
    remaining: Option<usize>,
}

impl ContinueToken {
    fn encode(&self) -> String {
        let plain = json!(self).to_string();
        plain.bytes().map(|b| format!("{b:02x}")).collect()
    }

    fn decode(token: &str) -> Result<Self> {
        let invalid = || {
            StoreError::BadRequest("continue key is not valid: start a new list without it".into())
        };
        let bytes = (0..token.len())
            .step_by(2)
            .map(|i| {
                token
                    .get(i..i + 2)
                    .and_then(|pair| u8::from_str_radix(pair, 16).ok())
            })
            .collect::<Option<Vec<u8>>>()
            .ok_or_else(invalid)?;
        serde_json::from_slice(&bytes).map_err(|_| invalid())
    }
}

/// Whether `rt` is the core group's `kind`.
fn is_core(rt: &ResourceType, kind: &str) -> bool {
    rt.group.is_empty() && rt.kind == kind
}

/// Whether a DELETE answers with the deleted object, as a real apiserver does for the types whose deletion
/// is graceful or whose storage asks for it (pods, services, namespaces); the others answer a `Success`
/// status.
fn answers_delete_with_object(rt: &ResourceType) -> bool {
    ["Pod", "Service", "Namespace"]
        .iter()
        .any(|kind| is_core(rt, kind))
}

/// The `Status` a DELETE of `deleted` answers.
fn deleted_status(rt: &ResourceType, deleted: &Value) -> Value {
    let mut details = json!({
        "name": deleted.pointer("/metadata/name"),
        "kind": rt.plural,
        "uid": deleted.pointer("/metadata/uid"),
    });
    if !rt.group.is_empty() {
        details["group"] = json!(rt.group);
    }
    json!({
        "kind": "Status",
        "apiVersion": "v1",
        "metadata": {},
        "status": "Success",
        "details": details,
    })
}
