//! The images a pod spec pulls, with their pull policies (`docs/semantics.md#pulls`): every
//! container of the three lists and every image volume, read once, and which of them an
//! UPDATE touched.
//!
//! ```
//! use policy_decode::json::At;
//! use tenancy_rules::pulls::{Puller, pulls};
//! use policy_decode::FieldPath;
//! let spec = serde_json::json!({
//!     "initContainers": [{"name": "init", "image": "busybox:1.36"}],
//!     "containers": [{"name": "app", "image": "nginx", "imagePullPolicy": "Never"}],
//!     "volumes": [{"name": "data", "image": {"reference": "quay.io/acme/data:1"}}]});
//! let found = pulls(&At::new(&spec, FieldPath::root("spec"))).unwrap();
//! assert_eq!(found.len(), 3);
//! assert_eq!(found[0].policy_path().as_str(), "spec.initContainers[0].imagePullPolicy");
//! assert_eq!(found[1].effective().unwrap().policy, "Never");
//! assert_eq!(found[2].source, Puller::ImageVolume);
//! assert_eq!(found[2].image_path().as_str(), "spec.volumes[0].image.reference");
//! ```

use std::collections::HashMap;

use kube_values::pull_policy::{EffectivePullPolicy, effective_pull_policy};
use policy_admission::mutation::Step;
use policy_admission::pod::{ContainerList, PodKind, PodView};
use policy_admission::request::{AdmissionRequest, Operation};
use policy_admission::workload::{PodTarget, pod_target};
use policy_decode::error::PolicyError;
use policy_decode::json::At;
use policy_decode::path::FieldPath;

/// What pulls an image: a container of one of the lists, or an image volume.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Puller {
    /// A container of that list.
    Container(ContainerList),
    /// A volume with an `image` source (`volumes[].image`).
    ImageVolume,
}

/// One image pulled by a pod spec: a container's `image` and `imagePullPolicy`, or an
/// image volume's `image.reference` and `image.pullPolicy`.
#[derive(Clone, Debug)]
pub struct Pull<'a> {
    /// The container list, or image volume.
    pub source: Puller,
    /// The index in its list (`containers[2]`, `volumes[5]`).
    pub index: usize,
    /// The container or volume name, if written.
    pub name: Option<&'a str>,
    /// The image reference, if written.
    pub image: Option<&'a str>,
    /// The written pull policy, if any.
    pub policy: Option<&'a str>,
    /// The path of the container, or of the image volume's `image` (`spec.containers[2]`,
    /// `spec.volumes[5].image`): the object holding the image and its pull policy.
    pub holder_path: FieldPath,
}

impl<'a> Pull<'a> {
    /// The path of the image (`spec.containers[2].image`, `spec.volumes[5].image.reference`),
    /// built when a message needs it.
    pub fn image_path(&self) -> FieldPath {
        self.holder_path.field(match self.source {
            Puller::Container(_) => "image",
            Puller::ImageVolume => "reference",
        })
    }

    /// The path of the pull policy (`…imagePullPolicy`, `…image.pullPolicy`), built when a
    /// message needs it.
    pub fn policy_path(&self) -> FieldPath {
        self.holder_path.field(self.policy_field())
    }

    /// The pull policy the image is pulled with: the written one, else the API server's
    /// default for the image ([`kube_values::pull_policy`]); `None` when neither can be told.
    pub fn effective(&self) -> Option<EffectivePullPolicy<'a>> {
        effective_pull_policy(self.policy, self.image)
    }

    /// The name of the pull-policy field (`imagePullPolicy`, or `pullPolicy` in an image
    /// volume).
    pub fn policy_field(&self) -> &'static str {
        match self.source {
            Puller::Container(_) => "imagePullPolicy",
            Puller::ImageVolume => "pullPolicy",
        }
    }

    /// Where the pull policy lives in a Pod object, as mutation steps plus the key
    /// (`spec.containers[2]` + `imagePullPolicy`; `spec.volumes[5].image` + `pullPolicy`).
    pub fn policy_steps(&self) -> (Vec<Step>, &'static str) {
        let steps = match self.source {
            Puller::Container(list) => vec![
                Step::Key("spec"),
                Step::Key(list.field()),
                Step::Index(self.index),
            ],
            Puller::ImageVolume => vec![
                Step::Key("spec"),
                Step::Key("volumes"),
                Step::Index(self.index),
                Step::Key("image"),
            ],
        };
        (steps, self.policy_field())
    }
}

/// Every image the pod spec `spec` pulls: init containers, containers, ephemeral
/// containers, then image volumes, in document order. A container or volume of the wrong
/// type, or an image or policy that is not a string, is malformed (400).
pub fn pulls<'a>(spec: &At<'a>) -> Result<Vec<Pull<'a>>, PolicyError> {
    let mut out = Vec::new();
    for list in ContainerList::ALL {
        for (index, c) in spec.get_list(list.field())?.into_iter().enumerate() {
            c.object()?;
            out.push(Pull {
                source: Puller::Container(list),
                index,
                name: c.get_str("name")?,
                image: c.get_str("image")?,
                policy: c.get_str("imagePullPolicy")?,
                holder_path: c.path,
            });
        }
    }
    for (index, v) in spec.get_list("volumes")?.into_iter().enumerate() {
        v.object()?;
        if let Some(img) = v.get_object("image")? {
            out.push(Pull {
                source: Puller::ImageVolume,
                index,
                name: v.get_str("name")?,
                image: img.get_str("reference")?,
                policy: img.get_str("pullPolicy")?,
                holder_path: img.path,
            });
        }
    }
    Ok(out)
}

/// What identifies a pull across an UPDATE: its list (or image volume) and name.
type PullKey<'a> = (Puller, Option<&'a str>);
/// What an UPDATE may change of a pull: its image and written pull policy.
type PullValue<'a> = (Option<&'a str>, Option<&'a str>);

/// The pulls of `new` that an UPDATE added or changed: those whose container (by list and
/// name) or image volume (by name) is absent from `old_spec`, or whose image or written
/// pull policy differs. One pass over each side (a map of the old ones).
pub fn changed<'a>(old_spec: &At<'_>, new: Vec<Pull<'a>>) -> Result<Vec<Pull<'a>>, PolicyError> {
    let old = pulls(old_spec)?;
    let before: HashMap<PullKey<'_>, PullValue<'_>> = old
        .iter()
        .map(|p| ((p.source, p.name), (p.image, p.policy)))
        .collect();
    Ok(new
        .into_iter()
        .filter(|p| before.get(&(p.source, p.name)) != Some(&(p.image, p.policy)))
        .collect())
}

/// What a request asks a pull rule to judge (`docs/semantics.md#pulls`).
#[derive(Clone, Debug)]
pub struct PullTarget<'a> {
    /// The pod spec (a Pod's, or a workload's template).
    pub view: PodView<'a>,
    /// The pulls to judge: all of them on CREATE and for a changed template; on a Pod
    /// UPDATE only the added or changed ones.
    pub pulls: Vec<Pull<'a>>,
    /// Whether the request is an UPDATE of a Pod (its pull policies are then immutable,
    /// except in ephemeral containers added through `pods/ephemeralcontainers`).
    pub pod_update: bool,
}

/// The pulls a request asks to judge, or `None` when it needs no judgement (DELETE,
/// CONNECT, an UPDATE leaving the pod spec or template alone, a ReplicationController
/// without template). A kind that is not pod-bearing is refused (400) with the policy's
/// name.
pub fn pull_target<'a>(
    request: &'a AdmissionRequest,
    policy: &str,
) -> Result<Option<PullTarget<'a>>, PolicyError> {
    let Some(view) = pod_target(request, policy, PodTarget::CreateAndUpdate)? else {
        return Ok(None);
    };
    let all = pulls(&view.spec)?;
    let pod_update = request.operation == Operation::Update && view.kind == PodKind::Pod;
    let pulls = if pod_update {
        match PodView::read(request.old_object()?.value, PodKind::Pod)? {
            Some(old) => changed(&old.spec, all)?,
            None => all,
        }
    } else {
        all
    };
    Ok(Some(PullTarget {
        view,
        pulls,
        pod_update,
    }))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::{Value, json};

    #[test]
    fn walks_all_container_lists_and_images() {
        let obj = json!({"spec": {
            "containers": [{"image": "a"}],
            "initContainers": [{"image": "b"}, {"image": "c"}],
            "ephemeralContainers": [{"image": "d"}],
            "volumes": [{"name": "v", "image": {"reference": "e"}}, {"name": "w", "emptyDir": {}}]
        }});
        let view = PodView::read(&obj, PodKind::Pod).unwrap().unwrap();
        let images: Vec<String> = pulls(&view.spec)
            .unwrap()
            .into_iter()
            .map(|p| format!("{}={}", p.image_path(), p.image.unwrap()))
            .collect();
        assert_eq!(
            images,
            [
                "spec.initContainers[0].image=b",
                "spec.initContainers[1].image=c",
                "spec.containers[0].image=a",
                "spec.ephemeralContainers[0].image=d",
                "spec.volumes[0].image.reference=e"
            ]
        );
    }

    fn request(kind: Value, op: &str, object: Value, old: Value) -> AdmissionRequest {
        serde_json::from_value(
            json!({"kind": kind, "operation": op, "object": object, "oldObject": old}),
        )
        .unwrap()
    }

    fn pod() -> Value {
        json!({"group": "", "version": "v1", "kind": "Pod"})
    }

    #[test]
    fn every_list_and_image_volumes_in_document_order() {
        let spec = json!({
            "containers": [{"name": "a", "image": "x:1"}],
            "initContainers": [{"name": "i", "image": "y:1", "restartPolicy": "Always"}],
            "ephemeralContainers": [{"name": "e", "image": "z"}],
            "volumes": [{"name": "cm", "configMap": {"name": "c"}}, {"name": "v", "image": {"reference": "d:1", "pullPolicy": "Never"}}]
        });
        let found = pulls(&At::new(&spec, FieldPath::root("spec"))).unwrap();
        let paths: Vec<String> = found.iter().map(|p| p.image_path().to_string()).collect();
        assert_eq!(
            paths,
            [
                "spec.initContainers[0].image",
                "spec.containers[0].image",
                "spec.ephemeralContainers[0].image",
                "spec.volumes[1].image.reference"
            ]
        );
        assert_eq!(found[3].index, 1);
        assert_eq!(found[3].policy, Some("Never"));
        assert_eq!(found[2].effective().unwrap().policy, "Always");
    }

    #[test]
    fn wrong_types_are_malformed() {
        for (spec, path) in [
            (json!({"containers": [1]}), "spec.containers[0]"),
            (
                json!({"containers": [{"image": 1}]}),
                "spec.containers[0].image",
            ),
            (
                json!({"volumes": [{"image": {"pullPolicy": []}}]}),
                "spec.volumes[0].image.pullPolicy",
            ),
            (json!({"volumes": {}}), "spec.volumes"),
        ] {
            let e = pulls(&At::new(&spec, FieldPath::root("spec"))).unwrap_err();
            assert!(e.to_string().starts_with(path), "{e} for {spec}");
        }
    }

    #[test]
    fn steps_reach_the_policy_field() {
        let spec = json!({"spec": {"ephemeralContainers": [{"name": "e"}], "volumes": [{"name": "v", "image": {}}]}});
        let at = At::new(&spec["spec"], FieldPath::root("spec"));
        let mut object = spec.clone();
        for p in pulls(&at).unwrap() {
            let (steps, key) = p.policy_steps();
            policy_admission::mutation::set_in(&mut object, &steps, key, json!("Always")).unwrap();
        }
        assert_eq!(
            object["spec"]["ephemeralContainers"][0]["imagePullPolicy"],
            "Always"
        );
        assert_eq!(
            object["spec"]["volumes"][0]["image"]["pullPolicy"],
            "Always"
        );
    }

    #[test]
    fn pod_updates_judge_added_and_changed_pulls_only() {
        let old = json!({"spec": {"containers": [{"name": "a", "image": "x:1"}, {"name": "b", "image": "y:1"}]}});
        let new = json!({"spec": {
            "containers": [{"name": "a", "image": "x:1"}, {"name": "b", "image": "y:2"}],
            "ephemeralContainers": [{"name": "debug", "image": "busybox:1"}]}});
        let r = request(pod(), "UPDATE", new, old);
        let t = pull_target(&r, "p").unwrap().unwrap();
        let names: Vec<_> = t.pulls.iter().map(|p| p.name.unwrap()).collect();
        assert_eq!(names, ["b", "debug"]);
        assert!(t.pod_update);
    }

    #[test]
    fn unchanged_updates_and_deletes_need_nothing() {
        let p = json!({"metadata": {"labels": {"a": "1"}}, "spec": {"containers": [{"name": "a", "image": "x:1"}]}});
        let mut q = p.clone();
        q["metadata"]["labels"]["a"] = json!("2");
        assert!(
            pull_target(&request(pod(), "UPDATE", q, p.clone()), "p")
                .unwrap()
                .is_none()
        );
        assert!(
            pull_target(&request(pod(), "DELETE", json!(null), p), "p")
                .unwrap()
                .is_none()
        );
    }

    #[test]
    fn templates_are_judged_whole_when_changed() {
        let dep = json!({"group": "apps", "version": "v1", "kind": "Deployment"});
        let old = json!({"spec": {"template": {"spec": {"containers": [{"name": "a", "image": "x:1"}, {"name": "b", "image": "y:1"}]}}}});
        let mut new = old.clone();
        new["spec"]["template"]["spec"]["containers"][1]["image"] = json!("y:2");
        let r = request(dep, "UPDATE", new, old);
        let t = pull_target(&r, "p").unwrap().unwrap();
        assert_eq!(t.pulls.len(), 2);
        assert!(!t.pod_update);
        let svc = json!({"group": "", "version": "v1", "kind": "Service"});
        let e = pull_target(&request(svc, "CREATE", json!({}), json!(null)), "p").unwrap_err();
        assert_eq!(e.code(), 400);
    }
}
