//! The server under test: `wardle local` as a child process, on a loopback port chosen once and
//! kept across restarts, with a fixed token and its certificates in a directory of its own, so
//! that clients keep talking to the same address after a `kill -9` and restart.

use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use base64::Engine;

/// How long the server may take to serve after it starts.
pub const START_TIMEOUT: Duration = Duration::from_secs(60);

/// A `wardle local` process.
pub struct WardleProcess {
    binary: PathBuf,
    dir: PathBuf,
    args: Vec<String>,
    port: u16,
    token: String,
    child: Option<Child>,
    starts: u32,
    /// The CA certificate (PEM) from its kubeconfig.
    pub ca_pem: String,
}

impl WardleProcess {
    /// Starts `binary local` with its files in `dir` and `args` (storage flags), and waits until
    /// it serves.
    pub fn start(
        binary: &Path,
        dir: &Path,
        args: Vec<String>,
        token: &str,
    ) -> Result<WardleProcess, String> {
        std::fs::create_dir_all(dir).map_err(|e| format!("{}: {e}", dir.display()))?;
        // The server runs in `dir`: relative paths would not find the binary.
        let binary = std::fs::canonicalize(binary)
            .map_err(|e| format!("the wardle binary {}: {e}", binary.display()))?;
        let dir = &std::fs::canonicalize(dir).map_err(|e| format!("{}: {e}", dir.display()))?;
        let mut p = WardleProcess {
            binary,
            dir: dir.to_path_buf(),
            args,
            port: free_port()?,
            token: token.to_string(),
            child: None,
            starts: 0,
            ca_pem: String::new(),
        };
        p.restart()?;
        Ok(p)
    }

    /// `https://127.0.0.1:<port>`.
    pub fn url(&self) -> String {
        format!("https://127.0.0.1:{}", self.port)
    }

    /// The process id, while it runs.
    pub fn pid(&self) -> Option<u32> {
        self.child.as_ref().map(Child::id)
    }

    /// Where the server's output goes.
    pub fn log_path(&self) -> PathBuf {
        self.dir.join("wardle.log")
    }

    /// The last lines of its output.
    pub fn log_tail(&self, lines: usize) -> String {
        let log = std::fs::read_to_string(self.log_path()).unwrap_or_default();
        let all: Vec<&str> = log.lines().collect();
        all[all.len().saturating_sub(lines)..].join("\n")
    }

    /// Kills it at once (SIGKILL): nothing flushed, nothing shut down.
    pub fn kill(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }

    /// Whether it exited by itself; its exit status if so.
    pub fn exited(&mut self) -> Option<String> {
        let status = self.child.as_mut()?.try_wait().ok()??;
        self.child = None;
        Some(status.to_string())
    }

    /// Whether it runs.
    pub fn running(&self) -> bool {
        self.child.is_some()
    }

    /// Kills it if it runs and starts it again on the same data, certificates, port and token;
    /// waits until it has written its kubeconfig (it does once it serves). If the port was
    /// taken meanwhile, moves to another one (see [`url`](Self::url)).
    pub fn restart(&mut self) -> Result<(), String> {
        self.kill();
        let mut last = String::new();
        for _ in 0..3 {
            match self.spawn() {
                Ok(()) => return Ok(()),
                Err(e) => {
                    last = e;
                    if self.log_tail(20).contains("in use") {
                        self.port = free_port()?;
                    }
                }
            }
        }
        Err(last)
    }

    fn spawn(&mut self) -> Result<(), String> {
        self.starts += 1;
        let kubeconfig = self.dir.join("wardle.kubeconfig");
        let _ = std::fs::remove_file(&kubeconfig);
        let log = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(self.log_path())
            .map_err(|e| e.to_string())?;
        let log_err = log.try_clone().map_err(|e| e.to_string())?;
        let child = Command::new(&self.binary)
            .arg("local")
            .args(["--secure-port", &self.port.to_string()])
            .args(["--bind-address", "127.0.0.1"])
            .arg("--write-kubeconfig")
            .arg(&kubeconfig)
            .arg("--cert-dir")
            .arg(self.dir.join("certificates"))
            .args(&self.args)
            .env("APISERVER_LOCAL_TOKEN", &self.token)
            .current_dir(&self.dir)
            .stdin(Stdio::null())
            .stdout(log)
            .stderr(log_err)
            .spawn()
            .map_err(|e| format!("spawning {}: {e}", self.binary.display()))?;
        self.child = Some(child);
        let deadline = Instant::now() + START_TIMEOUT;
        while !kubeconfig.exists() {
            if let Some(status) = self.exited() {
                return Err(format!(
                    "wardle exited before serving ({status}); its log ends:\n{}",
                    self.log_tail(20)
                ));
            }
            if Instant::now() > deadline {
                self.kill();
                return Err(format!(
                    "wardle did not serve within {START_TIMEOUT:?}; its log ends:\n{}",
                    self.log_tail(20)
                ));
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        // The file may be seen before it is fully written.
        std::thread::sleep(Duration::from_millis(20));
        let text = std::fs::read_to_string(&kubeconfig).map_err(|e| e.to_string())?;
        self.ca_pem = ca_from_kubeconfig(&text)?;
        Ok(())
    }
}

impl Drop for WardleProcess {
    fn drop(&mut self) {
        self.kill();
    }
}

/// The CA certificate of a kubeconfig's first cluster.
fn ca_from_kubeconfig(text: &str) -> Result<String, String> {
    let doc: serde_yaml_ng::Value =
        serde_yaml_ng::from_str(text).map_err(|e| format!("the kubeconfig is not YAML: {e}"))?;
    let data = doc["clusters"][0]["cluster"]["certificate-authority-data"]
        .as_str()
        .ok_or("the kubeconfig has no certificate-authority-data")?;
    let pem = base64::engine::general_purpose::STANDARD
        .decode(data.trim())
        .map_err(|e| format!("certificate-authority-data: {e}"))?;
    String::from_utf8(pem).map_err(|e| e.to_string())
}

/// A loopback port that was free a moment ago.
pub fn free_port() -> Result<u16, String> {
    TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .map_err(|e| format!("no free loopback port: {e}"))
}
