//! S3 (and S3-compatible stores: MinIO, Ceph, moto): objects read over the same
//! HTTP client as `http` (HEAD, ranged GET), addressed virtual-hosted
//! (`https://{bucket}.s3.{region}.amazonaws.com/{key}`, AWS's own) or path-style
//! (`{endpoint}/{bucket}/{key}`, what S3-compatible stores serve by default;
//! `locate_bucket`), listed with `ListObjectsV2` (one request per
//! 1000 keys, the whole prefix at once), and signed with AWS Signature
//! Version 4 when credentials are set (`AWS_ACCESS_KEY_ID`,
//! `AWS_SECRET_ACCESS_KEY`, `AWS_SESSION_TOKEN`); without them, requests go
//! unsigned (a public bucket). Keys are held in memory only.

use std::io;

use sha2::{Digest, Sha256};

use super::Meta;
use super::url::{RootUrl, Scheme, encode_component};

/// `x-amz-content-sha256` of an empty body (every request quarry sends).
const EMPTY_SHA256: &str = "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855";

/// How a bucket is named in a request (`[remote] s3_addressing`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Addressing {
    /// `{endpoint}/{bucket}/{key}`.
    Path,
    /// `{scheme}://{bucket}.{endpoint host}/{key}`.
    Virtual,
}

/// Where an S3 root's requests go.
#[derive(Debug, PartialEq, Eq)]
pub struct BucketAt {
    /// `scheme://host[:port]` requests are sent to (the bucket in the host
    /// name when virtual-hosted).
    pub base: String,
    /// The request path of the bucket: `/bucket` path-style, empty when the
    /// bucket is in the host name.
    pub bucket_path: String,
}

/// Where requests for `bucket` go. The endpoint is the configured one, else
/// `AWS_ENDPOINT_URL_S3` / `AWS_ENDPOINT_URL`, else AWS's own for the region
/// (`scheme://host[:port]` only). Addressing is the configured one, else
/// virtual-hosted on AWS (path-style is deprecated there, and refused for
/// buckets made since 2020) and path-style on any other endpoint (the form
/// every S3-compatible store serves without wildcard DNS for its buckets).
/// A bucket whose name has a dot is addressed path-style over https unless
/// virtual is configured: a certificate's wildcard covers one name only.
pub fn locate_bucket(
    bucket: &str,
    configured_endpoint: Option<&str>,
    configured: Option<Addressing>,
    region: &str,
) -> Result<BucketAt, String> {
    let endpoint = configured_endpoint
        .map(str::to_string)
        .or_else(|| std::env::var("AWS_ENDPOINT_URL_S3").ok())
        .or_else(|| std::env::var("AWS_ENDPOINT_URL").ok())
        .filter(|e| !e.is_empty())
        .unwrap_or_else(|| format!("https://s3.{region}.amazonaws.com"));
    let parsed = RootUrl::parse(&endpoint).map_err(|e| format!("S3 endpoint: {e}"))?;
    if !matches!(parsed.scheme, Scheme::Http | Scheme::Https) {
        return Err(format!(
            "the S3 endpoint '{endpoint}' must be an http(s):// URL"
        ));
    }
    let scheme = parsed.scheme.as_str();
    let host = parsed.authority.split(':').next().unwrap_or("");
    let on_aws = host == "amazonaws.com" || host.ends_with(".amazonaws.com");
    let addressing = configured.unwrap_or(
        if on_aws && !(bucket.contains('.') && parsed.scheme == Scheme::Https) {
            Addressing::Virtual
        } else {
            Addressing::Path
        },
    );
    Ok(match addressing {
        Addressing::Path => BucketAt {
            base: format!("{scheme}://{}", parsed.authority),
            bucket_path: format!("/{}", encode_component(bucket)),
        },
        Addressing::Virtual => {
            // The bucket becomes a host name label: only what DNS allows.
            let label_ok = !bucket.is_empty()
                && bucket
                    .bytes()
                    .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b"-.".contains(&b));
            if !label_ok {
                return Err(format!(
                    "the bucket '{bucket}' cannot be a host name: set [remote] s3_addressing = \"path\""
                ));
            }
            BucketAt {
                base: format!("{scheme}://{bucket}.{}", parsed.authority),
                bucket_path: String::new(),
            }
        }
    })
}

/// AWS credentials and the region requests are signed for.
pub struct Signer {
    access_key: String,
    secret_key: String,
    session_token: Option<String>,
    pub region: String,
}

impl std::fmt::Debug for Signer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Signer(region {})", self.region)
    }
}

/// The region from `AWS_REGION` / `AWS_DEFAULT_REGION`, else `us-east-1`.
pub fn region_from_env(configured: Option<&str>) -> String {
    configured
        .map(str::to_string)
        .or_else(|| std::env::var("AWS_REGION").ok())
        .or_else(|| std::env::var("AWS_DEFAULT_REGION").ok())
        .filter(|r| !r.is_empty())
        .unwrap_or_else(|| "us-east-1".into())
}

impl Signer {
    /// A signer from the standard environment variables; `None` without keys.
    pub fn from_env(region: String) -> Option<Signer> {
        let access_key = std::env::var("AWS_ACCESS_KEY_ID")
            .ok()
            .filter(|k| !k.is_empty())?;
        let secret_key = std::env::var("AWS_SECRET_ACCESS_KEY")
            .ok()
            .filter(|k| !k.is_empty())?;
        Some(Signer {
            access_key,
            secret_key,
            session_token: std::env::var("AWS_SESSION_TOKEN")
                .ok()
                .filter(|t| !t.is_empty()),
            region,
        })
    }

    /// The headers that sign a request with an empty body: `method`, `path`
    /// (already percent-encoded), `query` pairs (unencoded), `host`, the
    /// other headers to sign (lower-case names), at `amz_date`
    /// (`YYYYMMDDTHHMMSSZ`).
    pub fn headers(
        &self,
        (method, path, query): (&str, &str, &[(String, String)]),
        host: &str,
        signed: &[(&str, &str)],
        amz_date: &str,
    ) -> Vec<(String, String)> {
        let mut headers: Vec<(String, String)> = vec![
            ("host".into(), host.into()),
            ("x-amz-content-sha256".into(), EMPTY_SHA256.into()),
            ("x-amz-date".into(), amz_date.into()),
        ];
        if let Some(t) = &self.session_token {
            headers.push(("x-amz-security-token".into(), t.clone()));
        }
        headers.extend(
            signed
                .iter()
                .map(|(k, v)| (k.to_string(), v.trim().to_string())),
        );
        headers.sort();
        let mut pairs: Vec<(String, String)> = query
            .iter()
            .map(|(k, v)| (encode(k, true), encode(v, true)))
            .collect();
        pairs.sort();
        let canonical_query = pairs
            .iter()
            .map(|(k, v)| format!("{k}={v}"))
            .collect::<Vec<_>>()
            .join("&");
        let canonical_headers: String = headers.iter().map(|(k, v)| format!("{k}:{v}\n")).collect();
        let signed_names = headers
            .iter()
            .map(|(k, _)| k.as_str())
            .collect::<Vec<_>>()
            .join(";");
        let canonical = format!(
            "{method}\n{path}\n{canonical_query}\n{canonical_headers}\n{signed_names}\n{EMPTY_SHA256}"
        );
        let day = &amz_date[..8];
        let scope = format!("{day}/{}/s3/aws4_request", self.region);
        let to_sign = format!(
            "AWS4-HMAC-SHA256\n{amz_date}\n{scope}\n{}",
            hex(&Sha256::digest(canonical.as_bytes()))
        );
        let mut key = hmac(
            format!("AWS4{}", self.secret_key).as_bytes(),
            day.as_bytes(),
        );
        for part in [self.region.as_str(), "s3", "aws4_request"] {
            key = hmac(&key, part.as_bytes());
        }
        let signature = hex(&hmac(&key, to_sign.as_bytes()));
        let mut out: Vec<(String, String)> = headers
            .into_iter()
            .filter(|(k, _)| k != "host" && !signed.iter().any(|(s, _)| s == k))
            .collect();
        out.push((
            "authorization".into(),
            format!(
                "AWS4-HMAC-SHA256 Credential={}/{scope}, SignedHeaders={signed_names}, Signature={signature}",
                self.access_key
            ),
        ));
        out
    }
}

/// The time now as SigV4 writes it.
pub fn amz_date_now() -> String {
    chrono::Utc::now().format("%Y%m%dT%H%M%SZ").to_string()
}

fn hmac(key: &[u8], data: &[u8]) -> Vec<u8> {
    const BLOCK: usize = 64;
    let mut k = if key.len() > BLOCK {
        Sha256::digest(key).to_vec()
    } else {
        key.to_vec()
    };
    k.resize(BLOCK, 0);
    let inner: Vec<u8> = k.iter().map(|b| b ^ 0x36).collect();
    let outer: Vec<u8> = k.iter().map(|b| b ^ 0x5c).collect();
    let mut h = Sha256::new();
    h.update(&inner);
    h.update(data);
    let inner_hash = h.finalize();
    let mut h = Sha256::new();
    h.update(&outer);
    h.update(inner_hash);
    h.finalize().to_vec()
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// RFC 3986 encoding as SigV4 wants it (`/` kept in paths, not in query parts).
pub fn encode(s: &str, slash_too: bool) -> String {
    let mut out = String::new();
    for b in s.bytes() {
        if b.is_ascii_alphanumeric() || b"-._~".contains(&b) || (!slash_too && b == b'/') {
            out.push(b as char);
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

/// One page of a `ListObjectsV2` answer: (key, version) pairs and the
/// continuation token when more follow.
pub type ListPage = (Vec<(String, Meta)>, Option<String>);

/// Parses one page of a `ListObjectsV2` answer.
pub fn parse_list_page(xml: &str) -> io::Result<ListPage> {
    if !xml.contains("<ListBucketResult") {
        return Err(io::Error::other("not a ListObjectsV2 answer"));
    }
    let mut objects = Vec::new();
    for block in xml.split("<Contents>").skip(1) {
        let block = block.split("</Contents>").next().unwrap_or("");
        let (Some(key), Some(size)) = (tag(block, "Key"), tag(block, "Size")) else {
            continue;
        };
        let size = size
            .parse::<u64>()
            .map_err(|_| io::Error::other(format!("bad object size '{size}'")))?;
        let mtime_ns = tag(block, "LastModified")
            .and_then(|t| chrono::DateTime::parse_from_rfc3339(&t).ok())
            .map_or(0, |d| d.timestamp().saturating_mul(1_000_000_000));
        objects.push((
            key,
            Meta {
                size,
                mtime_ns,
                etag: tag(block, "ETag"),
            },
        ));
    }
    let more = tag(xml, "IsTruncated").is_some_and(|t| t == "true");
    Ok((
        objects,
        if more {
            tag(xml, "NextContinuationToken")
        } else {
            None
        },
    ))
}

/// The text of the first `<name>` element, XML entities decoded.
fn tag(xml: &str, name: &str) -> Option<String> {
    let start = xml.find(&format!("<{name}>"))? + name.len() + 2;
    let end = start + xml[start..].find(&format!("</{name}>"))?;
    Some(
        xml[start..end]
            .replace("&quot;", "\"")
            .replace("&apos;", "'")
            .replace("&lt;", "<")
            .replace("&gt;", ">")
            .replace("&amp;", "&"),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    /// AWS's own worked example of a signed GET with a Range (the S3 API
    /// reference, "Signature Calculations for the Authorization Header",
    /// example "GET Object"), with its published signature.
    #[test]
    fn the_signature_is_aws_worked_example() {
        let signer = Signer {
            access_key: "AKIAIOSFODNN7EXAMPLE".into(),
            secret_key: "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY".into(),
            session_token: None,
            region: "us-east-1".into(),
        };
        let headers = signer.headers(
            ("GET", "/test.txt", &[]),
            "examplebucket.s3.amazonaws.com",
            &[("range", "bytes=0-9")],
            "20130524T000000Z",
        );
        let auth = &headers
            .iter()
            .find(|(k, _)| k == "authorization")
            .unwrap()
            .1;
        assert_eq!(
            auth,
            "AWS4-HMAC-SHA256 Credential=AKIAIOSFODNN7EXAMPLE/20130524/us-east-1/s3/aws4_request, \
             SignedHeaders=host;range;x-amz-content-sha256;x-amz-date, \
             Signature=f0e8bdb87c964420e857bd35b5d6ed310bd44f0170aba48dd91039c6036bdb41"
        );
    }

    #[test]
    fn buckets_are_virtual_hosted_on_aws_and_path_style_elsewhere() {
        let at = |bucket, endpoint, addressing| {
            locate_bucket(bucket, Some(endpoint), addressing, "eu-west-1").unwrap()
        };
        let aws = "https://s3.eu-west-1.amazonaws.com";
        assert_eq!(
            at("run1", aws, None),
            BucketAt {
                base: "https://run1.s3.eu-west-1.amazonaws.com".into(),
                bucket_path: String::new()
            }
        );
        // A dotted bucket would not match AWS's wildcard certificate.
        assert_eq!(at("run.1", aws, None).bucket_path, "/run.1");
        let minio = "http://127.0.0.1:9000";
        assert_eq!(
            at("run1", minio, None),
            BucketAt {
                base: minio.into(),
                bucket_path: "/run1".into()
            }
        );
        // Configured, either way round.
        assert_eq!(at("run1", aws, Some(Addressing::Path)).bucket_path, "/run1");
        assert_eq!(
            at("run1", "http://localhost:9000", Some(Addressing::Virtual)).base,
            "http://run1.localhost:9000"
        );
        assert!(locate_bucket("Run_1", Some(minio), Some(Addressing::Virtual), "x").is_err());
        assert!(locate_bucket("b", Some("ftp://h"), None, "x").is_err());
    }

    #[test]
    fn list_pages_give_keys_sizes_times_and_the_next_token() {
        let xml = r#"<?xml version="1.0" encoding="UTF-8"?>
<ListBucketResult xmlns="http://s3.amazonaws.com/doc/2006-03-01/"><Name>b</Name>
<Contents><Key>data/a&amp;b.root</Key><LastModified>2026-11-27T19:00:01.000Z</LastModified>
<ETag>&quot;abc&quot;</ETag><Size>1234</Size></Contents>
<Contents><Key>data/sub/</Key><LastModified>2026-11-27T19:00:01.000Z</LastModified><Size>0</Size></Contents>
<IsTruncated>true</IsTruncated><NextContinuationToken>tok+1</NextContinuationToken></ListBucketResult>"#;
        let (objects, next) = parse_list_page(xml).unwrap();
        assert_eq!(objects.len(), 2);
        assert_eq!(objects[0].0, "data/a&b.root");
        assert_eq!(objects[0].1.size, 1234);
        assert_eq!(objects[0].1.etag.as_deref(), Some("\"abc\""));
        assert_eq!(objects[0].1.mtime_ns, 1_795_806_001 * 1_000_000_000);
        assert_eq!(next.as_deref(), Some("tok+1"));
        assert!(parse_list_page("<Error/>").is_err());
    }
}
