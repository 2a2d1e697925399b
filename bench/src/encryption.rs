//! Encryption at rest (issue 49): wardle with an `aesgcm` `--encryption-provider-config` for
//! Flunders against wardle without one, both on the embedded store, in the same run: CREATE
//! and GET one object, each expected within 20 % of the unencrypted server.

use std::path::Path;

use crate::client::Error;
use crate::compare::{alternate, creates, gets, throughput_row};
use crate::plan::Plan;
use crate::report::Row;
use crate::scenarios::create_get_me;
use crate::servers;
use crate::tls::Pki;

/// An `EncryptionConfiguration` encrypting Flunders with `aesgcm` (a fixed 32-byte key: the
/// bench measures, it keeps nothing secret), written `0600` in `work`; its path.
fn write_config(work: &Path) -> Result<String, Error> {
    use base64::Engine as _;
    let key: Vec<u8> = (0u8..32).collect();
    let text = format!(
        "apiVersion: apiserver.config.k8s.io/v1\nkind: EncryptionConfiguration\nresources:\n\
         - resources: [flunders.wardle.example.com]\n  providers:\n  - aesgcm:\n      keys:\n      \
         - name: key1\n        secret: {}\n  - identity: {{}}\n",
        base64::engine::general_purpose::STANDARD.encode(key)
    );
    let path = work.join("encryption.yaml");
    std::fs::write(&path, text)?;
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o600))?;
    }
    Ok(path.display().to_string())
}

/// The rows: GET one object and CREATE, a wardle with aesgcm for Flunders against one
/// without, both started empty for these rows alone (so neither carries the other scenarios'
/// objects).
pub async fn rows(plan: &Plan, work: &Path, pki: &Pki) -> Result<Vec<Row>, Error> {
    let config = write_config(work)?;
    let encrypted = servers::wardle(
        work,
        "wardle-aesgcm",
        pki,
        &["--encryption-provider-config".into(), config],
    )
    .await?;
    let plain = servers::wardle(work, "wardle-unencrypted", pki, &[]).await?;
    let (enc_pid, plain_pid) = ([encrypted.pid()], [plain.pid()]);
    let enc_one = create_get_me(&encrypted.target, "bench").await?;
    let plain_one = create_get_me(&plain.target, "bench").await?;
    let mut rows = Vec::new();

    let (e, p) = alternate(
        plan,
        |stop| {
            gets(
                &encrypted.target,
                &enc_one,
                plan.concurrency,
                &enc_pid,
                stop,
            )
        },
        |stop| {
            gets(
                &plain.target,
                &plain_one,
                plan.concurrency,
                &plain_pid,
                stop,
            )
        },
    )
    .await;
    rows.push(
        throughput_row("GET one object, aesgcm", e, "unencrypted wardle", p, Some(0.8))
            .note("--encryption-provider-config with aesgcm for Flunders; read from the watch cache, as upstream"),
    );

    let (e, p) = alternate(
        plan,
        |stop| creates(plan, &encrypted.target, "bench-create", &enc_pid, stop),
        |stop| creates(plan, &plain.target, "bench-create", &plain_pid, stop),
    )
    .await;
    rows.push(
        throughput_row("CREATE, aesgcm", e, "unencrypted wardle", p, Some(0.8))
            .note("embedded store; --encryption-provider-config with aesgcm for Flunders"),
    );
    Ok(rows)
}
