//! Pod-bearing resources and their containers (`docs/semantics.md#pod-bearing-kinds`): where the pod spec and pod
//! metadata live in each kind, and the container lists of a pod spec.

use std::collections::HashMap;

use serde_json::Value;

use crate::request::AdmissionRequest;
use policy_decode::error::PolicyError;
use policy_decode::json::At;
use policy_decode::path::FieldPath;

/// A kind that carries a pod spec.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PodKind {
    /// `v1 Pod`
    Pod,
    /// `v1 ReplicationController`
    ReplicationController,
    /// `apps/v1 Deployment`
    Deployment,
    /// `apps/v1 ReplicaSet`
    ReplicaSet,
    /// `apps/v1 StatefulSet`
    StatefulSet,
    /// `apps/v1 DaemonSet`
    DaemonSet,
    /// `batch/v1 Job`
    Job,
    /// `batch/v1 CronJob`
    CronJob,
}

/// Every pod-bearing kind, in the order of `docs/semantics.md#pod-bearing-kinds`.
pub const ALL_POD_KINDS: [PodKind; 8] = [
    PodKind::Pod,
    PodKind::ReplicationController,
    PodKind::Deployment,
    PodKind::ReplicaSet,
    PodKind::StatefulSet,
    PodKind::DaemonSet,
    PodKind::Job,
    PodKind::CronJob,
];

impl PodKind {
    /// The pod-bearing kind of `group`/`version`/`kind`, if it is one.
    pub fn from_gvk(group: &str, version: &str, kind: &str) -> Option<Self> {
        match (group, version, kind) {
            ("", "v1", "Pod") => Some(PodKind::Pod),
            ("", "v1", "ReplicationController") => Some(PodKind::ReplicationController),
            ("apps", "v1", "Deployment") => Some(PodKind::Deployment),
            ("apps", "v1", "ReplicaSet") => Some(PodKind::ReplicaSet),
            ("apps", "v1", "StatefulSet") => Some(PodKind::StatefulSet),
            ("apps", "v1", "DaemonSet") => Some(PodKind::DaemonSet),
            ("batch", "v1", "Job") => Some(PodKind::Job),
            ("batch", "v1", "CronJob") => Some(PodKind::CronJob),
            _ => None,
        }
    }

    /// The pod-bearing kind of a request, if it is one.
    pub fn of_request(request: &AdmissionRequest) -> Option<Self> {
        Self::from_gvk(
            &request.kind.group,
            &request.kind.version,
            &request.kind.kind,
        )
    }

    /// The path of the pod template (`spec.template`, `spec.jobTemplate.spec.template`);
    /// empty for Pods, whose spec and metadata are at the top.
    pub fn template_path(&self) -> &'static [&'static str] {
        match self {
            PodKind::Pod => &[],
            PodKind::CronJob => &["spec", "jobTemplate", "spec", "template"],
            _ => &["spec", "template"],
        }
    }

    /// Whether this kind holds a template (everything but Pods).
    pub fn is_template(&self) -> bool {
        !matches!(self, PodKind::Pod)
    }
}

/// The pod spec and metadata of a pod-bearing object, with their message paths.
#[derive(Clone, Debug)]
pub struct PodView<'a> {
    /// The kind the view was read from.
    pub kind: PodKind,
    /// The pod metadata (`metadata` or `<template>.metadata`), if present.
    pub metadata: Option<At<'a>>,
    /// The pod spec (`spec` or `<template>.spec`).
    pub spec: At<'a>,
}

impl<'a> PodView<'a> {
    /// Reads the pod spec of `object` (of kind `kind`). `Ok(None)` when a workload has no
    /// template to judge (a ReplicationController without template); a Pod without `spec`, a
    /// workload with a template but no spec, or a field of the wrong type is malformed.
    pub fn read(object: &'a Value, kind: PodKind) -> Result<Option<Self>, PolicyError> {
        let mut at = At::new(object, FieldPath::empty());
        for (i, segment) in kind.template_path().iter().enumerate() {
            match at.get_object(segment)? {
                Some(next) => at = next,
                None if kind == PodKind::ReplicationController && i == 1 => return Ok(None),
                None => return Err(PolicyError::malformed(&at.path.field(segment), "missing")),
            }
        }
        let metadata = at.get_object("metadata")?;
        let spec = at
            .get_object("spec")?
            .ok_or_else(|| PolicyError::malformed(&at.path.field("spec"), "missing"))?;
        Ok(Some(PodView {
            kind,
            metadata,
            spec,
        }))
    }

    /// Every container of the spec: init containers, containers, then ephemeral containers.
    pub fn containers(&self) -> Result<Vec<Container<'a>>, PolicyError> {
        let mut out = Vec::new();
        for list in ContainerList::ALL {
            for at in self.spec.get_list(list.field())? {
                at.object()?;
                out.push(Container { list, node: at });
            }
        }
        Ok(out)
    }
}

/// Which list a container belongs to.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ContainerList {
    /// `initContainers` (sidecars included).
    Init,
    /// `containers`
    Regular,
    /// `ephemeralContainers` (Pods only)
    Ephemeral,
}

impl ContainerList {
    /// All lists, in walking order.
    pub const ALL: [ContainerList; 3] = [
        ContainerList::Init,
        ContainerList::Regular,
        ContainerList::Ephemeral,
    ];

    /// The JSON field of the list.
    pub fn field(&self) -> &'static str {
        match self {
            ContainerList::Init => "initContainers",
            ContainerList::Regular => "containers",
            ContainerList::Ephemeral => "ephemeralContainers",
        }
    }
}

/// One container of a pod spec, with its path (`spec.initContainers[1]`).
#[derive(Clone, Debug)]
pub struct Container<'a> {
    /// The list it is in.
    pub list: ContainerList,
    /// The container object.
    pub node: At<'a>,
}

/// The volume mounts of a pod spec's containers grouped by volume name, read in one pass:
/// "which mounts use volume `v`" is then a lookup, not a scan of every container for every
/// volume.
#[derive(Debug, Default)]
pub struct MountIndex<'a> {
    by_name: HashMap<&'a str, Vec<At<'a>>>,
}

impl<'a> MountIndex<'a> {
    /// Reads every `volumeMounts` entry of `containers` (in container, then mount order); a
    /// mount or name of the wrong type is malformed.
    pub fn build(containers: &[Container<'a>]) -> Result<Self, PolicyError> {
        let mut by_name: HashMap<&'a str, Vec<At<'a>>> = HashMap::new();
        for c in containers {
            for m in c.node.get_list("volumeMounts")? {
                let name = m.get_str("name")?.unwrap_or("");
                by_name.entry(name).or_default().push(m);
            }
        }
        Ok(MountIndex { by_name })
    }

    /// The mounts of volume `name`, in container then mount order.
    pub fn by_name(&self, name: &str) -> &[At<'a>] {
        self.by_name.get(name).map_or(&[], Vec::as_slice)
    }
}

/// A [`MountIndex`] built on first use (most requests never need one).
#[derive(Debug, Default)]
pub struct LazyMounts<'a> {
    index: Option<MountIndex<'a>>,
}

impl<'a> LazyMounts<'a> {
    /// The index of `containers`' mounts, built the first time.
    pub fn get(&mut self, containers: &[Container<'a>]) -> Result<&MountIndex<'a>, PolicyError> {
        if self.index.is_none() {
            self.index = Some(MountIndex::build(containers)?);
        }
        Ok(self.index.get_or_insert_with(MountIndex::default))
    }
}

/// Whether the pod spec (Pods) or pod template (workloads) differs between `old` and `new`.
/// A missing template on either side counts as changed when the other has one.
pub fn pod_spec_changed(old: &Value, new: &Value, kind: PodKind) -> bool {
    // Compared in place: no copy of either (possibly large) spec.
    fn pick(v: &Value, kind: PodKind) -> Option<&Value> {
        let mut cur = v;
        for seg in kind.template_path() {
            cur = cur.get(seg)?;
        }
        if kind.is_template() {
            Some(cur)
        } else {
            cur.get("spec")
        }
    }
    pick(old, kind) != pick(new, kind)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn reads_every_kind_with_paths() {
        let spec = json!({"containers": [{"name": "c", "image": "nginx"}]});
        let cases = [
            (PodKind::Pod, json!({"spec": spec}), "spec"),
            (
                PodKind::Deployment,
                json!({"spec": {"template": {"spec": spec}}}),
                "spec.template.spec",
            ),
            (
                PodKind::CronJob,
                json!({"spec": {"jobTemplate": {"spec": {"template": {"spec": spec}}}}}),
                "spec.jobTemplate.spec.template.spec",
            ),
        ];
        for (kind, obj, path) in cases {
            let view = PodView::read(&obj, kind).unwrap().unwrap();
            assert_eq!(view.spec.path.to_string(), path);
            let cs = view.containers().unwrap();
            assert_eq!(cs[0].node.path.to_string(), format!("{path}.containers[0]"));
        }
    }

    #[test]
    fn replication_controller_without_template_has_nothing_to_judge() {
        let obj = json!({"spec": {"replicas": 1}});
        assert!(
            PodView::read(&obj, PodKind::ReplicationController)
                .unwrap()
                .is_none()
        );
        let err = PodView::read(&json!({"spec": {}}), PodKind::Deployment).unwrap_err();
        assert_eq!(err.to_string(), "spec.template: missing");
    }

    #[test]
    fn pod_without_spec_is_malformed() {
        let err = PodView::read(&json!({"metadata": {}}), PodKind::Pod).unwrap_err();
        assert_eq!(err.to_string(), "spec: missing");
        let err = PodView::read(&json!({"spec": "x"}), PodKind::Pod).unwrap_err();
        assert_eq!(err.to_string(), "spec: expected an object");
    }

    #[test]
    fn a_container_that_is_not_an_object_is_malformed() {
        let bad = json!({"spec": {"containers": ["x"]}});
        let view = PodView::read(&bad, PodKind::Pod).unwrap().unwrap();
        assert_eq!(
            view.containers().unwrap_err().to_string(),
            "spec.containers[0]: expected an object"
        );
    }

    #[test]
    fn mounts_by_volume_name_in_order() {
        let obj = json!({"spec": {
            "initContainers": [{"name": "i", "volumeMounts": [{"name": "a", "mountPath": "/i"}]}],
            "containers": [
                {"name": "c", "volumeMounts": [{"name": "b", "mountPath": "/b"}, {"name": "a", "mountPath": "/a"}]},
                {"name": "d"}
            ]
        }});
        let view = PodView::read(&obj, PodKind::Pod).unwrap().unwrap();
        let containers = view.containers().unwrap();
        let mut lazy = LazyMounts::default();
        let index = lazy.get(&containers).unwrap();
        let paths = |n: &str| -> Vec<String> {
            index
                .by_name(n)
                .iter()
                .map(|m| m.path.to_string())
                .collect()
        };
        assert_eq!(
            paths("a"),
            [
                "spec.initContainers[0].volumeMounts[0]",
                "spec.containers[0].volumeMounts[1]"
            ]
        );
        assert_eq!(paths("b"), ["spec.containers[0].volumeMounts[0]"]);
        assert!(paths("z").is_empty());
        let bad = json!({"spec": {"containers": [{"volumeMounts": [{"name": 1}]}]}});
        let view = PodView::read(&bad, PodKind::Pod).unwrap().unwrap();
        let containers = view.containers().unwrap();
        assert_eq!(
            MountIndex::build(&containers).unwrap_err().to_string(),
            "spec.containers[0].volumeMounts[0].name: expected a string"
        );
    }

    #[test]
    fn detects_pod_spec_changes() {
        let a = json!({"metadata": {"labels": {"a": "1"}}, "spec": {"x": 1}});
        let b = json!({"metadata": {"labels": {"a": "2"}}, "spec": {"x": 1}});
        let c = json!({"metadata": {}, "spec": {"x": 2}});
        assert!(!pod_spec_changed(&a, &b, PodKind::Pod));
        assert!(pod_spec_changed(&a, &c, PodKind::Pod));
        let d1 = json!({"spec": {"replicas": 1, "template": {"spec": {"x": 1}}}});
        let d2 = json!({"spec": {"replicas": 5, "template": {"spec": {"x": 1}}}});
        assert!(!pod_spec_changed(&d1, &d2, PodKind::Deployment));
    }
}
