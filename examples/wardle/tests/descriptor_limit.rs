//! wardle under a 256-descriptor limit, with more idle connections opened than descriptors:
//! `/readyz` still answers, and the process does not spin on `accept` failures. Once with the
//! default bound on open connections (derived from the limit: idle connections are closed to
//! make room), once with no bound (`accept` fails with `EMFILE`; the listener backs off and
//! closes the longest-idle connection).

use std::io::Read;
use std::net::TcpStream;
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use apiserver_framework::testing::wait;

const LIMIT: u32 = 256;
const CONNECTIONS: usize = 300;

/// `wardle local` with its descriptor limit at [`LIMIT`]; killed on drop.
struct Limited {
    child: Child,
    url: String,
    dir: tempfile::TempDir,
}

impl Drop for Limited {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Limited {
    fn start(extra: &[&str]) -> Limited {
        let dir = tempfile::tempdir().unwrap();
        let kubeconfig = dir.path().join("wardle.kubeconfig");
        let log = std::fs::File::create(dir.path().join("wardle.log")).unwrap();
        // The shell lowers its limit (soft and hard) and becomes wardle.
        let child = Command::new("sh")
            .arg("-c")
            .arg(format!("ulimit -n {LIMIT} && exec \"$0\" \"$@\""))
            .arg(env!("CARGO_BIN_EXE_wardle"))
            .args(["local", "--secure-port", "0", "--storage-backend", "memory"])
            .arg("--write-kubeconfig")
            .arg(&kubeconfig)
            .arg("--cert-dir")
            .arg(dir.path().join("certificates"))
            .args(extra)
            .current_dir(dir.path())
            .stdin(Stdio::null())
            .stdout(log.try_clone().unwrap())
            .stderr(log)
            .spawn()
            .expect("spawn wardle");
        let mut server = Limited {
            child,
            url: String::new(),
            dir,
        };
        let started = wait::poll_blocking("wardle to start", Duration::from_secs(20), || {
            assert!(
                server.child.try_wait().unwrap().is_none(),
                "wardle exited: {}",
                server.log()
            );
            kubeconfig.exists().then_some(()).ok_or("no kubeconfig yet")
        });
        if let Err(e) = started {
            panic!("{e}: {}", server.log());
        }
        let text = std::fs::read_to_string(&kubeconfig).unwrap();
        server.url = text
            .lines()
            .find_map(|l| l.trim().strip_prefix("server: "))
            .unwrap()
            .to_string();
        server
    }

    fn log(&self) -> String {
        std::fs::read_to_string(self.dir.path().join("wardle.log")).unwrap_or_default()
    }

    fn pid(&self) -> u32 {
        self.child.id()
    }

    /// User and system CPU time used so far.
    fn cpu(&self) -> Duration {
        let stat = std::fs::read_to_string(format!("/proc/{}/stat", self.pid())).unwrap();
        // Fields after the command name: state is field 3, utime 14 and stime 15.
        let fields: Vec<&str> = stat[stat.rfind(')').unwrap() + 2..].split(' ').collect();
        let ticks: u64 = fields[11].parse::<u64>().unwrap() + fields[12].parse::<u64>().unwrap();
        Duration::from_secs_f64(ticks as f64 / clock_ticks() as f64)
    }
}

fn clock_ticks() -> u64 {
    let out = Command::new("getconf").arg("CLK_TCK").output().unwrap();
    String::from_utf8(out.stdout)
        .unwrap()
        .trim()
        .parse()
        .unwrap()
}

/// Whether the server closed `conn`.
fn closed(conn: &mut TcpStream) -> bool {
    conn.set_nonblocking(true).unwrap();
    match conn.read(&mut [0u8; 16]) {
        Ok(0) => true,
        Ok(_) => false,
        Err(e) => e.kind() != std::io::ErrorKind::WouldBlock,
    }
}

async fn attack_and_probe(server: &Limited) {
    let limits = std::fs::read_to_string(format!("/proc/{}/limits", server.pid())).unwrap();
    let line = limits
        .lines()
        .find(|l| l.starts_with("Max open files"))
        .unwrap();
    assert!(line.contains(&format!(" {LIMIT} ")), "{line}");

    let addr = server.url.trim_start_matches("https://").to_string();
    let mut idle: Vec<TcpStream> = (0..CONNECTIONS)
        .map(|_| TcpStream::connect(&addr).unwrap())
        .collect();
    // Spaced on purpose: the attack stands two seconds (the server accepts up to its limit
    // and backs off) before the probe.
    tokio::time::sleep(Duration::from_secs(2)).await;

    apiserver_framework::tls::install_crypto_provider();
    let http = reqwest::Client::builder()
        .use_rustls_tls()
        .danger_accept_invalid_certs(true)
        .timeout(Duration::from_secs(20))
        .build()
        .unwrap();
    let asked = Instant::now();
    let res = http
        .get(format!("{}/readyz", server.url))
        .send()
        .await
        .unwrap_or_else(|e| panic!("/readyz did not answer: {e}\n{}", server.log()));
    assert_eq!(res.status(), 200);
    let answered = asked.elapsed();
    assert!(answered < Duration::from_secs(10), "{answered:?}");

    // Idle connections were closed to make room.
    let closed_count = idle.iter_mut().map(closed).filter(|c| *c).count();
    assert!(closed_count >= 30, "{closed_count} of {CONNECTIONS} closed");

    // The process idles while the remaining connections are held open.
    let before = server.cpu();
    // The measured subject: the CPU the process uses in three idle seconds.
    tokio::time::sleep(Duration::from_secs(3)).await;
    let used = server.cpu() - before;
    eprintln!(
        "/readyz answered in {answered:?}; {closed_count} of {CONNECTIONS} idle connections closed; {used:?} of CPU in 3 s"
    );
    assert!(used < Duration::from_secs(1), "{used:?} of CPU in 3 s");
    drop(idle);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn readyz_answers_past_the_descriptor_limit() {
    if !Path::new("/proc/self/stat").exists() {
        panic!("this test reads /proc (Linux)");
    }
    let bounded = Limited::start(&[]);
    attack_and_probe(&bounded).await;
    drop(bounded);

    let unbounded = Limited::start(&["--max-open-connections", "0"]);
    attack_and_probe(&unbounded).await;
    assert!(
        unbounded.log().contains("accept failed"),
        "{}",
        unbounded.log()
    );
}
