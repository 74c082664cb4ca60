//! The real policy-server started on the controller's policies.yml, its lookups answered by a
//! fake API server that enforces the PolicyServer's RBAC, and requests sent to it as the API
//! server sends them.

use std::path::{Path, PathBuf};

use serde_json::Value;

use crate::bench::server::PolicyServer;
use crate::http::{free_port, http_post};
use crate::kube::apiserver::{Access, FakeApi, RunningApi};
use crate::kube::controller::{Controller, ModulesDir, Namespaces, Route};
use crate::release::publish::server::read_answer;
use policy_host::error::{Error, Result};
use policy_host::host::Evaluation;

/// One webhook's answer to a request.
#[derive(Debug, Clone)]
pub struct Step {
    /// The policy id (`/validate/<id>`).
    pub id: String,
    /// Whether it is a mutating webhook.
    pub mutating: bool,
    /// The AdmissionRequest it received (mutated by the webhooks before it).
    pub request: Value,
    /// policy-server's answer, or why there is none.
    pub answer: std::result::Result<Evaluation, String>,
    /// The reads the fake API server refused while it answered.
    pub refused: Vec<Access>,
}

impl Step {
    /// Whether policy-server allowed the request.
    pub fn allowed(&self) -> bool {
        self.answer.as_ref().is_ok_and(|e| e.response.allowed)
    }
}

/// Every webhook the API server called for a request, in order.
#[derive(Debug, Clone, Default)]
pub struct Admission {
    /// The answers.
    pub steps: Vec<Step>,
}

impl Admission {
    /// The API server's verdict: every webhook called allowed the request.
    pub fn allowed(&self) -> bool {
        self.steps.iter().all(Step::allowed)
    }

    /// The step of policy `id`, when the request was sent to it.
    pub fn step(&self, id: &str) -> Option<&Step> {
        self.steps.iter().find(|s| s.id == id)
    }
}

/// A running policy-server configured by the controller, with its fake API server.
pub struct Deployment {
    /// The controller's view: ids, routes.
    pub controller: Controller,
    api: RunningApi,
    server: PolicyServer,
    port: u16,
    dir: PathBuf,
    sent: usize,
}

impl Deployment {
    /// Writes the controller's policies.yml (modules from `modules`) into `dir` and starts
    /// `binary` on it, its lookups sent to `api`.
    pub fn start(
        controller: Controller,
        modules: &ModulesDir,
        api: FakeApi,
        binary: &Path,
        dir: &Path,
    ) -> Result<Deployment> {
        std::fs::create_dir_all(dir).map_err(|e| Error::io(dir, e))?;
        let dir = std::path::absolute(dir).map_err(|e| Error::io(dir, e))?;
        let policies = controller.policies_yml(modules)?;
        let policies_file = dir.join("policies.yml");
        let text = serde_json::to_string_pretty(&policies)
            .map_err(|e| Error::Invalid(format!("policies.yml: {e}")))?;
        std::fs::write(&policies_file, text).map_err(|e| Error::io(&policies_file, e))?;
        let api = api.serve()?;
        let kubeconfig = dir.join("kubeconfig.yml");
        api.write_kubeconfig(&kubeconfig)?;
        let port = free_port(true)?;
        let server = PolicyServer::start(binary, &policies_file, &kubeconfig, &dir, port, None)?;
        Ok(Deployment {
            controller,
            api,
            server,
            port,
            dir,
            sent: 0,
        })
    }

    /// Every read the fake API server answered, with whether the role granted it.
    pub fn reads(&self) -> Vec<(Access, bool)> {
        self.api.reads()
    }

    /// policy-server's resident memory now and at its peak, in KiB (Linux).
    pub fn memory_kib(&self) -> Option<(u64, u64)> {
        self.server.memory_kib()
    }

    /// Where policies.yml, the log and the request bodies are.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// Sends `request` to every webhook the API server would call among the policies
    /// `installed` keeps, in its order: mutating webhooks one after the other, each patch
    /// applied before the next (a refusal ends the request there), then every validating
    /// webhook on the final object. Each webhook is matched when its turn comes, against the
    /// request as mutated so far (a Namespace labelled by an earlier webhook is routed by it).
    pub fn admit(
        &mut self,
        request: &Value,
        namespaces: &Namespaces,
        installed: impl Fn(&str) -> bool,
    ) -> Admission {
        let ordered: Vec<(String, bool, Route)> = self
            .controller
            .ordered()
            .into_iter()
            .filter(|p| installed(&p.id))
            .map(|p| (p.id.clone(), p.mutating, p.route.clone()))
            .collect();
        let mut current = request.clone();
        let mut admission = Admission::default();
        for (id, mutating, route) in ordered {
            // a mutating webhook's refusal ends the request before any other webhook
            if admission.steps.iter().any(|s| s.mutating && !s.allowed()) {
                break;
            }
            if !route.applies(&current, namespaces) {
                continue;
            }
            let step = self.send(&id, mutating, &current);
            if mutating
                && let Ok(eval) = &step.answer
                && eval.response.allowed
                && let Some(patch) = &eval.patch
                && let Some(object) = current.get_mut("object")
            {
                match serde_json::from_value::<json_patch::Patch>(patch.clone())
                    .map_err(|e| e.to_string())
                    .and_then(|p| json_patch::patch(object, &p).map_err(|e| e.to_string()))
                {
                    Ok(()) => {}
                    Err(why) => {
                        admission.steps.push(Step {
                            answer: Err(format!("its patch does not apply: {why}")),
                            ..step
                        });
                        break;
                    }
                }
            }
            admission.steps.push(step);
        }
        admission
    }

    /// One request to `/validate/<id>`.
    fn send(&mut self, id: &str, mutating: bool, request: &Value) -> Step {
        self.sent += 1;
        let before = self.api.reads().len();
        let review = serde_json::json!({"apiVersion": "admission.k8s.io/v1",
            "kind": "AdmissionReview", "request": request});
        let body = self.dir.join(format!("request-{}.json", self.sent));
        let answer = std::fs::write(&body, review.to_string())
            .map_err(|e| Error::io(&body, e))
            .and_then(|()| {
                http_post(
                    self.port,
                    &format!("/validate/{id}"),
                    review.to_string().as_bytes(),
                )
            })
            .map_err(|e| format!("policy-server: {e}"))
            .and_then(|(status, answer)| read_answer(status, &answer));
        let refused = self
            .api
            .reads()
            .into_iter()
            .skip(before)
            .filter(|(_, granted)| !granted)
            .map(|(access, _)| access)
            .collect();
        Step {
            id: id.to_owned(),
            mutating,
            request: request.clone(),
            answer,
            refused,
        }
    }

    /// Stops policy-server and the fake API server.
    pub fn stop(mut self) {
        self.server.stop();
    }
}
