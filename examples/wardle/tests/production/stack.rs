//! A development host (in this process, so the test can count the reviews it answers) with
//! the real `wardle serve` binary behind it, both in a temporary directory.

use std::path::PathBuf;
use std::process::{Child, Command, Output, Stdio};
use std::time::Duration;

use apiserver_framework::devhost::{DevHost, DevHostOptions};
use apiserver_framework::duration::GoDuration;
use apiserver_framework::testing::tls;
use apiserver_framework::testing::wait;
use rcgen::{CertificateParams, DnType, ExtendedKeyUsagePurpose, Issuer, KeyPair};
use serde_json::Value;

/// How long wardle may take to answer `/readyz`, and an APIService to change condition.
pub const TIMEOUT: Duration = Duration::from_secs(30);

/// The namespaced Flunder collection.
pub const FLUNDERS: &str = "/apis/wardle.example.com/v1alpha1/namespaces/default/flunders";
/// The APIService of wardle's group-version.
pub const APISERVICE: &str =
    "/apis/apiregistration.k8s.io/v1/apiservices/v1alpha1.wardle.example.com";

/// A dev host and wardle in production mode behind it.
pub struct Stack {
    /// The host (aggregator, reviews, ConfigMap).
    pub host: DevHost,
    dir: tempfile::TempDir,
    /// The port wardle serves on (the host's Service resolves to it).
    pub backend_port: u16,
    wardle: Option<Child>,
    args: Vec<String>,
    /// The wardle binary run.
    binary: PathBuf,
}

impl Stack {
    /// Starts the host, then wardle with `extra` flags, and waits until wardle is ready and
    /// its APIService available.
    pub async fn start(extra: &[&str]) -> Stack {
        Self::start_binary(env!("CARGO_BIN_EXE_wardle").into(), extra).await
    }

    /// Like [`Stack::start`], running the wardle binary at `binary` (a release build, say).
    pub async fn start_binary(binary: PathBuf, extra: &[&str]) -> Stack {
        Self::start_with_host(binary, |_| {}, extra).await
    }

    /// Like [`Stack::start_binary`], the host's options changed by `host` first.
    pub async fn start_with_host(
        binary: PathBuf,
        host: impl FnOnce(&mut DevHostOptions),
        extra: &[&str],
    ) -> Stack {
        let (host, dir, backend_port) = start_host_with(host).await;
        let mut args = serving_args(&host, backend_port);
        args.splice(0..0, ["serve".to_string()]);
        args.extend([
            "--data-dir".to_string(),
            dir.path().join("data").display().to_string(),
        ]);
        args.extend(extra.iter().map(|s| s.to_string()));
        Self::launch(host, dir, backend_port, binary, args).await
    }

    /// The host with Kubernetes' sample-apiserver behind it in wardle's place (`binary`, built
    /// by `scripts/build-upstream sample-apiserver`), storing in the etcd at `etcd_servers`:
    /// the same serving certificate, identity and flags as wardle, and two more. The host
    /// serves neither `flowcontrol.apiserver.k8s.io` nor admission policies, whose informers
    /// sample-apiserver would wait for: priority and fairness is off. Its admission policy
    /// plugins read the dev host's policies, as wardle's do: `ValidatingAdmissionPolicy`, and
    /// `MutatingAdmissionPolicy` with its feature gate on (off by default in 1.34, as wardle's
    /// plugin is; the differential suite turns wardle's on). (For `tests/client_go.rs` and the
    /// differential suite.)
    #[allow(dead_code)]
    pub async fn start_sample_apiserver(binary: PathBuf, etcd_servers: &str) -> Stack {
        let (host, dir, backend_port) = start_host_with(|_| {}).await;
        let mut args = serving_args(&host, backend_port);
        args.extend(
            [
                "--etcd-servers",
                etcd_servers,
                "--enable-priority-and-fairness=false",
                "--feature-gates=MutatingAdmissionPolicy=true",
            ]
            .map(String::from),
        );
        Self::launch(host, dir, backend_port, binary, args).await
    }

    /// Starts `binary` with `args` behind `host` and waits until it is ready and its
    /// APIService available.
    async fn launch(
        host: DevHost,
        dir: tempfile::TempDir,
        backend_port: u16,
        binary: PathBuf,
        args: Vec<String>,
    ) -> Stack {
        let mut stack = Stack {
            host,
            dir,
            backend_port,
            wardle: None,
            args,
            binary,
        };
        stack.start_wardle().await;
        stack.wait_available("True").await;
        stack
    }

    /// `https://127.0.0.1:<port>` of wardle itself.
    pub fn wardle_url(&self) -> String {
        format!("https://127.0.0.1:{}", self.backend_port)
    }

    /// The host's URL.
    pub fn host_url(&self) -> &str {
        &self.host.url
    }

    /// The bearer token of a user of the host's token file.
    pub fn token(&self, user: &str) -> String {
        self.host
            .tokens
            .token_of(user)
            .unwrap_or_else(|| panic!("no token for {user}"))
            .to_string()
    }

    /// A client trusting the host's CA (which also issued wardle's serving certificate).
    pub fn client(&self) -> reqwest::Client {
        self.client_builder(tls::http1_config(&self.host.files.ca_pem))
    }

    /// Like [`Stack::client`], presenting a client certificate.
    pub fn client_with_identity(&self, cert_pem: &str, key_pem: &str) -> reqwest::Client {
        let ca = &self.host.files.ca_pem;
        let identity = format!("{cert_pem}{key_pem}");
        self.client_builder(tls::client_config_with_identity(ca, &identity, tls::HTTP1))
    }

    fn client_builder(&self, tls: rustls::ClientConfig) -> reqwest::Client {
        reqwest::Client::builder()
            .use_preconfigured_tls(tls)
            .tls_info(true)
            .timeout(Duration::from_secs(20))
            .build()
            .expect("a client")
    }

    /// Starts wardle (again) and waits until `/readyz` answers 200.
    pub async fn start_wardle(&mut self) {
        let log = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(self.dir.path().join("wardle.log"))
            .expect("open the log");
        let child = Command::new(&self.binary)
            .args(&self.args)
            .current_dir(self.dir.path())
            .stdin(Stdio::null())
            .stdout(log.try_clone().expect("clone the log"))
            .stderr(log)
            .spawn()
            .expect("spawn wardle");
        self.wardle = Some(child);
        let client = self.client();
        let ready = wait::poll("wardle to be ready", TIMEOUT, || {
            if let Some(status) = self
                .wardle
                .as_mut()
                .and_then(|c| c.try_wait().ok().flatten())
            {
                panic!("wardle exited ({status}); its log:\n{}", self.log());
            }
            let readyz = client.get(format!("{}/readyz", self.wardle_url())).send();
            async move {
                match readyz.await {
                    Ok(res) if res.status() == 200 => Ok(()),
                    Ok(res) => Err(format!("/readyz: {}", res.status())),
                    Err(e) => Err(e.to_string()),
                }
            }
        });
        if let Err(e) = ready.await {
            panic!("{e}; its log:\n{}", self.log());
        }
    }

    /// The process id of the running wardle (for `tests/attack_bounds.rs`).
    #[allow(dead_code)]
    pub fn wardle_pid(&self) -> u32 {
        self.wardle.as_ref().expect("wardle is running").id()
    }

    /// Kills wardle.
    pub fn stop_wardle(&mut self) {
        if let Some(mut child) = self.wardle.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }

    /// Compacts the embedded store of this wardle (its `--data-dir`) to its current revision,
    /// through the storage's own `Storage::compact`, as the server's compactor does at each
    /// `--compaction-interval`: lists and watches from an older resource version answer
    /// `410 Gone` afterwards. A running wardle holds the store's lock: stop it first
    /// ([`Stack::stop_wardle`]). Returns the revision compacted to.
    #[allow(dead_code)]
    pub async fn compact_embedded_store(&self) -> u64 {
        use apiserver_framework::storage::Storage;
        use apiserver_framework::storage::embedded::EmbeddedStorage;
        let dir = self.path("data");
        let store = EmbeddedStorage::open(&dir)
            .unwrap_or_else(|e| panic!("open the embedded store in {}: {e}", dir.display()));
        let revision = store
            .current_revision()
            .await
            .expect("its current revision");
        store.compact(revision).await.expect("compact the store");
        revision
    }

    /// What wardle printed.
    pub fn log(&self) -> String {
        std::fs::read_to_string(self.dir.path().join("wardle.log")).unwrap_or_default()
    }

    /// A scratch file in the test's directory.
    pub fn path(&self, name: &str) -> PathBuf {
        self.dir.path().join(name)
    }

    /// Sends `method path` to `base` with a bearer token; returns the status and body.
    pub async fn call(
        &self,
        client: &reqwest::Client,
        method: reqwest::Method,
        url: &str,
        token: Option<&str>,
        body: Option<Value>,
    ) -> (u16, String) {
        let mut req = client.request(method, url);
        if let Some(t) = token {
            req = req.bearer_auth(t);
        }
        if let Some(b) = body {
            req = req.json(&b);
        }
        let res = req.send().await.expect("the request is answered");
        let status = res.status().as_u16();
        (status, res.text().await.unwrap_or_default())
    }

    /// Sends `method url` as the host's user `user` (with its bearer token), with `body` as
    /// JSON if any; the status and the body.
    pub async fn send_as(
        &self,
        user: &str,
        method: reqwest::Method,
        url: &str,
        body: Option<Value>,
    ) -> (u16, String) {
        self.call(&self.client(), method, url, Some(&self.token(user)), body)
            .await
    }

    /// Sends `method url` with no body as the bearer of `token`; the status and the body.
    pub async fn as_bearer(
        &self,
        client: &reqwest::Client,
        method: reqwest::Method,
        url: &str,
        token: &str,
    ) -> (u16, String) {
        self.call(client, method, url, Some(token), None).await
    }

    /// The `Available` condition of wardle's APIService, read as the host's admin.
    pub async fn available_condition(&self) -> Value {
        let (code, body) = self
            .call(
                &self.client(),
                reqwest::Method::GET,
                &format!("{}{APISERVICE}", self.host_url()),
                Some(&self.token("admin")),
                None,
            )
            .await;
        assert_eq!(code, 200, "{body}");
        let v: Value = serde_json::from_str(&body).expect("JSON");
        v["status"]["conditions"]
            .as_array()
            .and_then(|c| c.iter().find(|c| c["type"] == "Available"))
            .cloned()
            .unwrap_or(Value::Null)
    }

    /// Waits until the APIService's `Available` status is `status`; returns the condition.
    pub async fn wait_available(&self, status: &str) -> Value {
        let what = format!("the APIService to be Available={status}");
        let available = wait::poll(&what, TIMEOUT, || async {
            let c = self.available_condition().await;
            if c["status"] == status { Ok(c) } else { Err(c) }
        })
        .await;
        available.unwrap_or_else(|e| panic!("{e}; wardle's log:\n{}", self.log()))
    }

    /// Runs kubectl as `user` of the host (its kubeconfig, a cache directory of its own).
    pub fn kubectl(&self, user: &str, args: &[&str]) -> Output {
        self.kubectl_command(user, args)
            .output()
            .expect("run kubectl")
    }

    /// A kubectl command as `user` of the host.
    pub fn kubectl_command(&self, user: &str, args: &[&str]) -> Command {
        self.kubectl_command_of(std::path::Path::new("kubectl"), user, args)
    }

    /// A command of the kubectl binary `kubectl` as `user` of the host.
    pub fn kubectl_command_of(
        &self,
        kubectl: &std::path::Path,
        user: &str,
        args: &[&str],
    ) -> Command {
        let mut cmd = Command::new(kubectl);
        cmd.arg("--kubeconfig")
            .arg(self.host.files.kubeconfig_path(user))
            .arg("--cache-dir")
            .arg(self.dir.path().join(format!("kube-cache-{user}")))
            .args(args)
            .env_remove("KUBECONFIG")
            .stdin(Stdio::null());
        cmd
    }

    /// A client certificate (PEM cert, PEM key) for `cn` in group `org`, issued by the CA
    /// kept as `<dev-host dir>/<ca>.crt|key`; valid now, or expired in 2001.
    pub fn issue_client_cert(
        &self,
        ca: &str,
        cn: &str,
        org: Option<&str>,
        expired: bool,
    ) -> (String, String) {
        let dir = &self.host.files.dir;
        let ca_cert = std::fs::read_to_string(dir.join(format!("{ca}.crt"))).expect("CA cert");
        let ca_key = KeyPair::from_pem(
            &std::fs::read_to_string(dir.join(format!("{ca}.key"))).expect("CA key"),
        )
        .expect("CA key");
        issue_certificate(
            &Issuer::from_ca_cert_pem(&ca_cert, ca_key).expect("CA"),
            cn,
            org,
            expired,
        )
    }

    /// A client certificate for `cn` from a CA nobody trusts.
    pub fn foreign_client_cert(&self, cn: &str) -> (String, String) {
        foreign_certificate(cn)
    }
}

impl Drop for Stack {
    fn drop(&mut self) {
        self.stop_wardle();
    }
}

/// A dev host in a new temporary directory, its options changed by `change`, with the free
/// port its backend will serve on.
async fn start_host_with(
    change: impl FnOnce(&mut DevHostOptions),
) -> (DevHost, tempfile::TempDir, u16) {
    let dir = tempfile::tempdir().expect("a temporary directory");
    let backend_port = apiserver_framework::testing::free_port().expect("a free port");
    let mut opts = DevHostOptions {
        secure_port: 0,
        dir: dir.path().join("dev-host"),
        backend_address: ([127, 0, 0, 1], backend_port).into(),
        availability_check_interval: GoDuration(Duration::from_millis(500)),
        ..Default::default()
    };
    change(&mut opts);
    let host = wardle::app()
        .start_dev_host(&opts)
        .await
        .expect("the dev host starts");
    (host, dir, backend_port)
}

/// The flags that serve a backend of `host` on `backend_port`, as upstream's extension servers
/// spell them: its serving certificate, and its identity's kubeconfig for delegated
/// authentication, authorization and the host's API.
fn serving_args(host: &DevHost, backend_port: u16) -> Vec<String> {
    let files = &host.files;
    let identity = files
        .kubeconfig_path(&apiserver_framework::devhost::files::server_identity(
            "wardle",
        ))
        .display()
        .to_string();
    [
        "--bind-address",
        "127.0.0.1",
        "--secure-port",
        &backend_port.to_string(),
        "--tls-cert-file",
        &files.backend_cert.cert_path.display().to_string(),
        "--tls-private-key-file",
        &files.backend_cert.key_path.display().to_string(),
        "--authentication-kubeconfig",
        &identity,
        "--authorization-kubeconfig",
        &identity,
        "--kubeconfig",
        &identity,
    ]
    .iter()
    .map(|s| s.to_string())
    .collect()
}

/// A client certificate for `cn` (organization `org`) from a CA nobody trusts.
pub fn foreign_certificate(cn: &str) -> (String, String) {
    let key = KeyPair::generate().expect("key");
    let mut params = CertificateParams::new(Vec::<String>::new()).expect("params");
    params
        .distinguished_name
        .push(DnType::CommonName, "foreign-ca");
    params.is_ca = rcgen::IsCa::Ca(rcgen::BasicConstraints::Unconstrained);
    issue_certificate(&Issuer::new(params, key), cn, None, false)
}

/// A client certificate for `cn` (organization `org`) signed by `issuer`, expired in 2001 if
/// `expired`: its PEM and its key's.
pub fn issue_certificate(
    issuer: &Issuer<'_, KeyPair>,
    cn: &str,
    org: Option<&str>,
    expired: bool,
) -> (String, String) {
    let key = KeyPair::generate().expect("key");
    let mut params = CertificateParams::new(Vec::<String>::new()).expect("params");
    params.distinguished_name.push(DnType::CommonName, cn);
    if let Some(o) = org {
        params.distinguished_name.push(DnType::OrganizationName, o);
    }
    params.extended_key_usages = vec![ExtendedKeyUsagePurpose::ClientAuth];
    if expired {
        params.not_before = rcgen::date_time_ymd(2000, 1, 1);
        params.not_after = rcgen::date_time_ymd(2001, 1, 1);
    }
    let cert = params.signed_by(&key, issuer).expect("sign");
    (cert.pem(), key.serialize_pem())
}
