//! Remote roots for the tests: Debian's nginx, started on a free loopback port
//! serving a sandbox's root folder (directory listings as JSON, range
//! requests), stopped when dropped. `Sandbox::serve_over` points the sandbox's
//! `--root` at it, so a test written for a local root runs unchanged on the
//! same files read over HTTP.

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use super::{Sandbox, holds_within, wait_until};

pub use super::faults::{FaultProxy, XrdRelay};

/// Where a test's root is read from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Over {
    /// The local folder.
    Local,
    /// nginx on loopback serving the folder.
    Http,
    /// moto (an S3-compatible server) on loopback holding the folder's files
    /// as objects of a bucket.
    S3,
    /// Debian's xrootd on loopback exporting the folder.
    Xrootd,
    /// The same xrootd over its HTTP plugin (XrdHttp): `http://` URLs
    /// listed from its HTML pages.
    XrootdHttp,
}

/// Where a sandbox's root is served (`Sandbox::serve_over`): one of the
/// servers shared by the tests of this binary (`shared`), and the root's
/// folder (or S3 prefix) there. A root with its own content is copied to a
/// folder of its own, removed when this is dropped.
pub struct Server {
    kind: SharedServer,
    /// The root's path on the server, with its trailing slash
    /// (`testdata/`, `sandbox-3/`): what its URL adds to the server's.
    pub path: String,
    own_folder: Option<PathBuf>,
}

#[derive(Clone, Copy)]
enum SharedServer {
    Nginx(&'static Nginx),
    Moto(&'static Moto),
    Xrootd(&'static Xrootd),
    /// The same xrootd's HTTP plugin (XrdHttp).
    XrootdHttp(&'static Xrootd),
}

impl Drop for Server {
    fn drop(&mut self) {
        if let Some(folder) = &self.own_folder {
            let _ = std::fs::remove_dir_all(folder);
        }
    }
}

impl Server {
    /// Checks that quarry read this root's files by ranges (nginx, moto) or
    /// logged in (xrootd logs no paths): the test did not pass on a local copy.
    pub fn assert_read_by_ranges(&self) {
        match self.kind {
            SharedServer::Nginx(n) => n.assert_read_by_ranges(&self.path),
            SharedServer::Moto(m) => m.assert_read_by_ranges(&self.path),
            SharedServer::Xrootd(x) => x.assert_logged_in(),
            SharedServer::XrootdHttp(x) => x.assert_logged_in_over_http(),
        }
    }

    /// The server's port (a fault proxy's upstream).
    pub fn port(&self) -> u16 {
        match self.kind {
            SharedServer::Nginx(n) => n.port,
            SharedServer::Moto(m) => m.port,
            SharedServer::Xrootd(x) => x.port,
            SharedServer::XrootdHttp(x) => x.http_port,
        }
    }

    /// The root's URL reached on `port` of loopback instead (a proxy or
    /// relay in front of the server); not for S3, whose URL names no host.
    pub fn url_through(&self, port: u16) -> String {
        match self.kind {
            SharedServer::Nginx(_) => format!("http://127.0.0.1:{port}/{}", self.path),
            SharedServer::Xrootd(_) => {
                format!(
                    "root://127.0.0.1:{port}/{}/{}",
                    shared::served().display(),
                    self.path
                )
            }
            // XrdHttp's paths are the exported folder's own.
            SharedServer::XrootdHttp(_) => format!(
                "http://127.0.0.1:{port}{}/{}",
                shared::served().display(),
                self.path
            ),
            SharedServer::Moto(_) => panic!("an S3 root is reached through its endpoint"),
        }
    }
}

pub mod shared;

/// A running xrootd exporting one folder (as `nobody` when the tests run as
/// root: xrootd refuses to run as root), over `root://` and, by its HTTP
/// plugin, over `http://` on a second port.
pub struct Xrootd {
    child: Child,
    pub port: u16,
    pub http_port: u16,
    pub url: String,
    dir: tempfile::TempDir,
}

impl Drop for Xrootd {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Xrootd {
    pub fn serve(folder: &Path) -> Xrootd {
        Xrootd::serve_on(folder, free_port())
    }

    /// `serve` on a given port (a server started again where it was).
    pub fn serve_on(folder: &Path, port: u16) -> Xrootd {
        Xrootd::start(folder, port, true)
    }

    /// `serve` with XrdHttp's HTML listings turned off (`http.listingdeny`,
    /// as many sites run it): folders are listed over HTTP by WebDAV alone.
    pub fn serve_without_html_listings(folder: &Path) -> Xrootd {
        Xrootd::start(folder, free_port(), false)
    }

    fn start(folder: &Path, port: u16, html_listings: bool) -> Xrootd {
        use std::os::unix::fs::PermissionsExt;
        let binary = ["/usr/bin/xrootd", "/usr/sbin/xrootd"]
            .iter()
            .map(PathBuf::from)
            .find(|p| p.exists())
            .expect("xrootd is not installed: run scripts/setup-system.sh");
        let dir = tempfile::tempdir().unwrap();
        std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o777)).unwrap();
        // SAFETY: geteuid(2) has no preconditions.
        let as_root = unsafe { libc::geteuid() } == 0;
        if as_root {
            readable_by_all(folder);
        }
        let http_port = free_port();
        let config = dir.path().join("xrootd.cfg");
        std::fs::write(
            &config,
            format!(
                "all.export {folder}\nall.adminpath {admin}\nall.pidpath {admin}\n\
                 xrd.protocol XrdHttp:{http_port} libXrdHttp.so\nhttp.listingdeny {deny}\n",
                folder = folder.display(),
                admin = dir.path().display(),
                deny = !html_listings,
            ),
        )
        .unwrap();
        let mut cmd = Command::new(binary);
        cmd.current_dir(dir.path())
            .args(["-p", &port.to_string(), "-n", &format!("quarry{port}")])
            .arg("-c")
            .arg(&config)
            .arg("-l")
            .arg(dir.path().join("xrootd.log"))
            .arg("-s")
            .arg(dir.path().join("xrootd.pid"));
        if as_root {
            cmd.args(["-R", "nobody"]);
        }
        let child = cmd
            .arg(folder)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        wait_until(Duration::from_secs(20), || {
            [port, http_port]
                .iter()
                .all(|&p| std::net::TcpStream::connect(("127.0.0.1", p)).is_ok())
        });
        Xrootd {
            child,
            port,
            http_port,
            url: format!("root://127.0.0.1:{port}/{}/", folder.display()),
            dir,
        }
    }

    /// Checks that quarry logged in (xrootd logs each login).
    pub fn assert_logged_in(&self) {
        let log = self.log();
        assert!(log.contains("login"), "no login in xrootd's log: {log}");
    }

    /// Checks that quarry came in over HTTP (XrdHttp's bridge logs each
    /// login).
    pub fn assert_logged_in_over_http(&self) {
        let log = self.log();
        assert!(
            log.lines()
                .any(|l| l.contains("XrootdBridge") && l.contains("login")),
            "no HTTP login in xrootd's log: {log}"
        );
    }

    /// xrootd's log so far.
    fn log(&self) -> String {
        // xrootd puts its log in a folder named after the instance (`-n`).
        // Links are not followed: xrootd's admin folder links to its /proc
        // entry, whose `cwd` leads back here.
        fn logs(dir: &Path, into: &mut String) {
            for entry in std::fs::read_dir(dir).into_iter().flatten().flatten() {
                let path = entry.path();
                if entry.file_type().is_ok_and(|t| t.is_dir()) {
                    logs(&path, into);
                } else if path.to_string_lossy().contains("xrootd.log") {
                    into.push_str(&std::fs::read_to_string(&path).unwrap_or_default());
                }
            }
        }
        let mut log = String::new();
        logs(self.dir.path(), &mut log);
        log
    }
}

/// The folder, the folders above it and everything below readable by every
/// user (the test's temporary folders are private).
fn readable_by_all(folder: &Path) {
    use std::os::unix::fs::PermissionsExt;
    let mut at = Some(folder);
    while let Some(dir) = at {
        if dir == Path::new("/") || dir == std::env::temp_dir() {
            break;
        }
        let mode = std::fs::metadata(dir).unwrap().permissions().mode();
        std::fs::set_permissions(dir, std::fs::Permissions::from_mode(mode | 0o755)).unwrap();
        at = dir.parent();
    }
    fn below(dir: &Path) {
        for entry in std::fs::read_dir(dir).unwrap() {
            let entry = entry.unwrap();
            let path = entry.path();
            let mode = entry.metadata().unwrap().permissions().mode();
            if entry.file_type().unwrap().is_dir() {
                std::fs::set_permissions(&path, std::fs::Permissions::from_mode(mode | 0o755))
                    .unwrap();
                below(&path);
            } else {
                std::fs::set_permissions(&path, std::fs::Permissions::from_mode(mode | 0o644))
                    .unwrap();
            }
        }
    }
    below(folder);
}

/// moto's `moto_server`: `QUARRY_MOTO_SERVER`, else on the PATH (scripts/test.sh
/// installs it with scripts/setup-moto.sh and requires it).
pub fn moto_server() -> Option<PathBuf> {
    let found = std::env::var_os("QUARRY_MOTO_SERVER")
        .map(PathBuf::from)
        .filter(|p| p.exists())
        .or_else(|| {
            std::env::var_os("PATH")?
                .to_str()?
                .split(':')
                .map(|d| Path::new(d).join("moto_server"))
                .find(|p| p.exists())
        });
    if found.is_none() && std::env::var_os("QUARRY_REQUIRE_MOTO").is_some() {
        panic!("moto_server not found: run scripts/setup-moto.sh and set QUARRY_MOTO_SERVER");
    }
    if found.is_none() {
        eprintln!("skipped: moto_server not found (scripts/setup-moto.sh installs it)");
    }
    found
}

/// A running moto server with one bucket.
pub struct Moto {
    child: Child,
    pub port: u16,
    pub endpoint: String,
    log: tempfile::NamedTempFile,
}

impl Drop for Moto {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Moto {
    /// Starts moto on a free loopback port, makes `bucket` and uploads every
    /// file below `folder` under `prefix/`.
    pub fn serve(binary: &Path, bucket: &str, prefix: &str, folder: &Path) -> Moto {
        let moto = Moto::start(binary, bucket);
        moto.upload(bucket, prefix, folder);
        moto
    }

    /// Starts moto on a free loopback port and makes `bucket`.
    pub fn start(binary: &Path, bucket: &str) -> Moto {
        let port = free_port();
        let log = tempfile::NamedTempFile::new().unwrap();
        let child = Command::new(binary)
            .args(["-H", "127.0.0.1", "-p", &port.to_string()])
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(log.reopen().unwrap())
            .spawn()
            .unwrap();
        wait_until(Duration::from_secs(30), || {
            std::net::TcpStream::connect(("127.0.0.1", port)).is_ok()
        });
        let endpoint = format!("http://127.0.0.1:{port}");
        let agent: ureq::Agent = ureq::Agent::config_builder()
            .http_status_as_error(true)
            .build()
            .into();
        agent
            .put(&format!("{endpoint}/{bucket}"))
            .send_empty()
            .unwrap();
        Moto {
            child,
            port,
            endpoint,
            log,
        }
    }

    /// Uploads every file below `folder` as objects under `prefix/` of `bucket`.
    pub fn upload(&self, bucket: &str, prefix: &str, folder: &Path) {
        let agent: ureq::Agent = ureq::Agent::config_builder()
            .http_status_as_error(true)
            .build()
            .into();
        upload(
            &agent,
            &format!("{}/{bucket}/{prefix}", self.endpoint),
            folder,
        );
    }

    /// Checks that a ranged GET of an object under `prefix` (with its
    /// trailing slash) reached moto.
    pub fn assert_read_by_ranges(&self, prefix: &str) {
        let log = std::fs::read_to_string(self.log.path()).unwrap();
        let object = format!("/{prefix}");
        assert!(
            // werkzeug colours its log: the method follows an escape code.
            log.lines()
                .any(|l| l.contains("GET /") && l.contains(&object) && l.contains(" 206 ")),
            "no ranged request for {prefix} reached moto"
        );
    }
}

fn upload(agent: &ureq::Agent, url: &str, folder: &Path) {
    for entry in std::fs::read_dir(folder).unwrap() {
        let entry = entry.unwrap();
        let name = entry.file_name().into_string().unwrap();
        if entry.file_type().unwrap().is_dir() {
            upload(agent, &format!("{url}/{name}"), &entry.path());
        } else {
            let bytes = std::fs::read(entry.path()).unwrap();
            agent
                .put(&format!("{url}/{name}"))
                .send(&bytes[..])
                .unwrap();
        }
    }
}

/// A running nginx serving one folder.
pub struct Nginx {
    child: Child,
    pub port: u16,
    /// The folder's URL, with its trailing slash.
    pub url: String,
    pub dir: tempfile::TempDir,
}

impl Drop for Nginx {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn nginx_binary() -> PathBuf {
    ["/usr/sbin/nginx", "/usr/bin/nginx"]
        .iter()
        .map(PathBuf::from)
        .find(|p| p.exists())
        .expect("nginx is not installed: run scripts/setup-system.sh")
}

/// A port on loopback nothing listens on now.
pub fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

impl Nginx {
    /// Serves `folder` at `http://127.0.0.1:PORT/` (one process, in the
    /// foreground, as the test's own user).
    pub fn serve(folder: &Path) -> Nginx {
        let dir = tempfile::tempdir().unwrap();
        let port = free_port();
        let d = dir.path().display();
        let conf = format!(
            "daemon off;\nmaster_process off;\nworker_processes 1;\npid {d}/nginx.pid;\n\
             error_log {d}/error.log;\nevents {{ worker_connections 1024; }}\n\
             http {{\n access_log {d}/access.log;\n client_body_temp_path {d}/body;\n\
             proxy_temp_path {d}/proxy;\n fastcgi_temp_path {d}/fastcgi;\n\
             uwsgi_temp_path {d}/uwsgi;\n scgi_temp_path {d}/scgi;\n\
             server {{\n  listen 127.0.0.1:{port};\n  root {};\n\
             location / {{ autoindex on; autoindex_format json; }}\n }}\n}}\n",
            folder.display()
        );
        std::fs::write(dir.path().join("nginx.conf"), conf).unwrap();
        let child = Command::new(nginx_binary())
            .arg("-e")
            .arg(dir.path().join("error.log"))
            .arg("-p")
            .arg(dir.path())
            .arg("-c")
            .arg(dir.path().join("nginx.conf"))
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        wait_until(Duration::from_secs(10), || {
            std::net::TcpStream::connect(("127.0.0.1", port)).is_ok()
        });
        Nginx {
            child,
            port,
            url: format!("http://127.0.0.1:{port}/"),
            dir,
        }
    }

    /// Checks that quarry read files below `path` (the folder's path on the
    /// server, `""` for all) by ranges (206 answers in the access log): the
    /// test did not pass on some local copy.
    pub fn assert_read_by_ranges(&self, path: &str) {
        let below = format!(" /{path}");
        let ranged = self
            .requests()
            .iter()
            .filter(|l| l.contains(&below) && l.contains("\" 206 "))
            .count();
        assert!(
            ranged > 0,
            "no ranged request reached nginx: {:?}",
            self.requests()
        );
    }

    /// The requests nginx has logged so far (its access log's lines).
    pub fn requests(&self) -> Vec<String> {
        std::fs::read_to_string(self.dir.path().join("access.log"))
            .unwrap_or_default()
            .lines()
            .map(str::to_string)
            .collect()
    }
}

impl Sandbox {
    /// Serves the sandbox's root over `over` from now on, from the servers
    /// the tests share (`shared`): quarry is given its URL instead of its
    /// folder. A root untouched since `with_testdata` is the servers' copy
    /// of the test data; any other is copied to a folder (or S3 prefix) of
    /// its own, and for nginx and xrootd `root` becomes that folder, so that
    /// later changes to it are served. That folder lives as long as the result.
    pub fn serve_over(&mut self, over: Over) -> Option<Server> {
        let pristine = *self.pristine.lock().unwrap();
        let server = match over {
            Over::Local => return None,
            Over::Http | Over::Xrootd | Over::XrootdHttp => {
                let kind = match over {
                    Over::Http => SharedServer::Nginx(shared::nginx()),
                    Over::Xrootd => SharedServer::Xrootd(shared::xrootd()),
                    _ => SharedServer::XrootdHttp(shared::xrootd()),
                };
                match pristine {
                    Some(form) => Server {
                        kind,
                        path: shared::testdata(form),
                        own_folder: None,
                    },
                    None => self.own_served_folder(kind),
                }
            }
            Over::S3 => {
                let moto = shared::moto();
                let path = match pristine {
                    Some(form) => shared::moto_testdata(form),
                    None => {
                        let prefix = shared::sandbox_name();
                        moto.upload(shared::BUCKET, &prefix, &self.root);
                        format!("{prefix}/")
                    }
                };
                self.use_moto(moto);
                Server {
                    kind: SharedServer::Moto(moto),
                    path,
                    own_folder: None,
                }
            }
        };
        self.url = Some(match server.kind {
            SharedServer::Moto(_) => format!("s3://{}/{}", shared::BUCKET, server.path),
            _ => server.url_through(server.port()),
        });
        Some(server)
    }

    /// The root copied to a new folder of the shared servers' folder, made
    /// the sandbox's root.
    fn own_served_folder(&mut self, kind: SharedServer) -> Server {
        let name = shared::sandbox_name();
        let folder = shared::served().join(&name);
        std::fs::create_dir(&folder).unwrap();
        super::copy_tree(&self.root, &folder);
        // SAFETY: geteuid(2) has no preconditions.
        if unsafe { libc::geteuid() } == 0 {
            readable_by_all(&folder);
        }
        self.root = folder.clone();
        Server {
            kind,
            path: format!("{name}/"),
            own_folder: Some(folder),
        }
    }

    /// The environment that makes quarry reach S3 at `moto` (signed with
    /// throwaway keys, which moto takes).
    pub fn use_moto(&mut self, moto: &Moto) {
        for (k, v) in [
            ("AWS_ENDPOINT_URL_S3", moto.endpoint.as_str()),
            ("AWS_ACCESS_KEY_ID", "testing"),
            ("AWS_SECRET_ACCESS_KEY", "testing"),
            ("AWS_REGION", "us-east-1"),
        ] {
            self.env.retain(|(key, _)| key != k);
            self.env.push((k.into(), v.into()));
        }
    }

    /// Serves the root from a moto of its own, under `s3://quarry-test/data/`
    /// (a test that resets moto's state); `None` without moto.
    pub fn serve_over_own_moto(&mut self) -> Option<Moto> {
        let binary = moto_server()?;
        let moto = Moto::serve(&binary, shared::BUCKET, "data", &self.root);
        self.url = Some(format!("s3://{}/data/", shared::BUCKET));
        self.use_moto(&moto);
        Some(moto)
    }
}

/// A real XRootD cluster on loopback: a redirector (xrootd and cmsd with
/// `all.role manager`) and one data server (xrootd and cmsd with
/// `all.role server` reporting to it), all exporting one folder, as an EOS
/// or a site's redirector and its disk servers are arranged. Clients go to
/// the manager, which redirects each file's requests to the data server.
pub struct XrootdCluster {
    children: Vec<Child>,
    /// The manager's port and the root's URL there.
    pub port: u16,
    pub url: String,
    pub data_port: u16,
    dir: tempfile::TempDir,
}

impl Drop for XrootdCluster {
    fn drop(&mut self) {
        for child in &mut self.children {
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}

impl XrootdCluster {
    pub fn serve(folder: &Path) -> XrootdCluster {
        use std::os::unix::fs::PermissionsExt;
        let find = |name: &str| {
            ["/usr/bin", "/usr/sbin"]
                .iter()
                .map(|d| Path::new(d).join(name))
                .find(|p| p.exists())
                .unwrap_or_else(|| panic!("{name} is not installed: run scripts/setup-system.sh"))
        };
        let (xrootd, cmsd) = (find("xrootd"), find("cmsd"));
        let dir = tempfile::tempdir().unwrap();
        std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o777)).unwrap();
        // SAFETY: geteuid(2) has no preconditions.
        let as_root = unsafe { libc::geteuid() } == 0;
        if as_root {
            readable_by_all(folder);
        }
        let (port, data_port, cms_port) = (free_port(), free_port(), free_port());
        let mut children = Vec::new();
        for (role, xrd_port) in [("manager", port), ("server", data_port)] {
            let admin = dir.path().join(format!("admin-{role}"));
            std::fs::create_dir(&admin).unwrap();
            std::fs::set_permissions(&admin, std::fs::Permissions::from_mode(0o777)).unwrap();
            // `cms.delay startup 1`: the manager redirects as soon as its
            // server has logged in, not after the default 90 s.
            let config = format!(
                "all.role {role}\nall.manager 127.0.0.1:{cms_port}\nall.export {}\n\
                 xrd.port {xrd_port}\nall.adminpath {a}\nall.pidpath {a}\ncms.delay startup 1\n",
                folder.display(),
                a = admin.display()
            );
            let config_file = dir.path().join(format!("{role}.cfg"));
            std::fs::write(&config_file, config).unwrap();
            for binary in [&xrootd, &cmsd] {
                let name = binary.file_name().unwrap().to_str().unwrap();
                let mut cmd = Command::new(binary);
                cmd.current_dir(dir.path())
                    .arg("-c")
                    .arg(&config_file)
                    .args(["-n", &format!("{role}{xrd_port}")])
                    .arg("-l")
                    .arg(dir.path().join(format!("{name}-{role}.log")));
                if as_root {
                    cmd.args(["-R", "nobody"]);
                }
                children.push(
                    cmd.stdin(Stdio::null())
                        .stdout(Stdio::null())
                        .stderr(Stdio::null())
                        .spawn()
                        .unwrap(),
                );
            }
            if role == "manager" {
                // The data server's cmsd logs in at once when the manager's
                // listens already; refused, it tries again only 10 s later.
                wait_until(Duration::from_secs(20), || {
                    std::net::TcpStream::connect(("127.0.0.1", cms_port)).is_ok()
                });
            }
        }
        let cluster = XrootdCluster {
            children,
            port,
            url: format!("root://127.0.0.1:{port}/{}/", folder.display()),
            data_port,
            dir,
        };
        // Ready once the data server's cmsd has logged in to the manager's
        // (`Protocol: Primary server.PID:FD@HOST:PORT logged in.`).
        let logged_in = || {
            cluster
                .log("cmsd", "manager")
                .lines()
                .any(|l| l.contains(" server.") && l.contains("logged in"))
        };
        if !holds_within(Duration::from_secs(60), logged_in) {
            let tail = |binary: &str, role: &str| {
                let log = cluster.log(binary, role);
                let lines: Vec<&str> = log.lines().collect();
                lines[lines.len().saturating_sub(15)..].join("\n")
            };
            panic!(
                "the data server's cmsd did not log in to the manager's within 60 s (ports {port}, {data_port}, cms {cms_port})\n\
                 manager's cmsd:\n{}\nserver's cmsd:\n{}\nserver's xrootd:\n{}",
                tail("cmsd", "manager"),
                tail("cmsd", "server"),
                tail("xrootd", "server")
            );
        }
        cluster
    }

    /// The log of `binary` (xrootd, cmsd) of `role` (manager, server): in
    /// the folder named after the instance (`-n`). (The folder also holds
    /// the admin paths, whose links lead into /proc: never walked.)
    pub fn log(&self, binary: &str, role: &str) -> String {
        let port = if role == "manager" {
            self.port
        } else {
            self.data_port
        };
        let file = self
            .dir
            .path()
            .join(format!("{role}{port}"))
            .join(format!("{binary}-{role}.log"));
        std::fs::read_to_string(file).unwrap_or_default()
    }
}

/// The uproot fixture's histogram of the test data's ROOT file `file`
/// (`tests/fixtures/root/selections.json`, from `scripts/fixtures/root_selections.py`): the
/// call's arguments and numpy's bin counts, for its first histogram (no cut, no weights)
/// or its first with a cut.
fn fixture_histogram(file: &str, with_cut: bool) -> (serde_json::Value, serde_json::Value) {
    let fixture = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/root/selections.json");
    let doc: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(fixture).unwrap()).unwrap();
    let f = doc["files"]
        .as_array()
        .unwrap()
        .iter()
        .find(|f| f["file"] == format!("testdata/root/{file}"))
        .unwrap_or_else(|| panic!("no fixture for {file}"));
    let histograms = f["histograms"].as_array().unwrap();
    let h = if with_cut {
        histograms.iter().find(|h| h["cut"].is_string()).unwrap()
    } else {
        let h = &histograms[0];
        assert!(h.get("cut").is_none() && h.get("weights").is_none());
        h
    };
    let mut args = serde_json::json!({"path": format!("root/{file}"), "tree": f["tree"],
        "branch": h["value"], "bins": h["bins"], "range": h["range"]});
    if with_cut {
        args["selection"] = h["cut"].clone();
    }
    (args, h["bin_counts"].clone())
}

/// The fixture's first histogram of `file` (see `fixture_histogram`).
pub fn uproot_histogram(file: &str) -> (serde_json::Value, serde_json::Value) {
    fixture_histogram(file, false)
}

/// The fixture's first histogram of `file` that has a cut (see `fixture_histogram`).
pub fn uproot_histogram_with_cut(file: &str) -> (serde_json::Value, serde_json::Value) {
    fixture_histogram(file, true)
}

/// Waits (40 s at most) until the catalog describes `root/f.root` as the version of
/// `new_len` bytes that replaced it between listing and reading: the new file's folders at
/// the new size, never the listed version's histograms, nor a mix of the two.
pub async fn wait_indexed_as_replaced(client: &super::Client, new_len: usize) {
    let started = std::time::Instant::now();
    loop {
        let (v, is_error) = super::call(
            client,
            "inspect_file",
            serde_json::json!({"path": "root/f.root"}),
        )
        .await;
        if !is_error {
            let d = &v["data"];
            let histograms = !d["histograms"].as_array().unwrap().is_empty();
            assert!(!histograms, "the listed version was stored: {v}");
            assert_eq!(d["size_bytes"], new_len, "{v}");
            assert!(!d["directories"].as_array().unwrap().is_empty(), "{v}");
            return;
        }
        assert!(
            started.elapsed() < Duration::from_secs(40),
            "never indexed: {v}"
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

/// No kind of the first data root has a failed file (`status`: an `index_status` answer).
pub fn assert_no_failed_kinds(status: &serde_json::Value) {
    for kind in ["root", "document", "code", "hdf5"] {
        assert_eq!(
            status["data"]["roots"][0]["kinds"][kind]["failed"], 0,
            "{status}"
        );
    }
}

/// After a fault: the catalog lists the files it listed before (`indexed`, a `list_files`
/// answer) and no kind has a failed file.
pub async fn assert_catalog_kept(client: &super::Client, indexed: &serde_json::Value) {
    let all = serde_json::json!({"kind": "all", "limit": 1000});
    let after = super::call_ok(client, "list_files", all).await;
    assert_eq!(after["data"]["files"], indexed["data"]["files"]);
    let status = super::call_ok(client, "index_status", serde_json::json!({})).await;
    assert_no_failed_kinds(&status);
}

// ---- objects replaced on a moto of a test's own (never the shared one) ----

/// Makes `bytes` the object `key` of moto's bucket `quarry-test`, and the
/// bucket's only object, on a moto of the test's own (`serve_over_own_moto`):
/// moto refuses an unsigned overwrite, so its state is
/// reset and the bucket made again (a new object: another ETag, size and time).
pub fn replace_object(moto: &Moto, key: &str, bytes: &[u8]) {
    replace_object_at(&moto.endpoint, key, bytes)
}

/// `replace_object` given moto's endpoint (for a hook run on another thread).
pub fn replace_object_at(endpoint: &str, key: &str, bytes: &[u8]) {
    let agent: ureq::Agent = ureq::Agent::config_builder()
        .http_status_as_error(true)
        .build()
        .into();
    agent
        .post(&format!("{endpoint}/moto-api/reset"))
        .send_empty()
        .unwrap();
    agent
        .put(&format!("{endpoint}/quarry-test"))
        .send_empty()
        .unwrap();
    agent
        .put(&format!("{endpoint}/quarry-test/{key}"))
        .send(bytes)
        .unwrap();
}
