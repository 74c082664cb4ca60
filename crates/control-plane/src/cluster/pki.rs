//! The cluster's certificates: one authority signing the servers' certificates (etcd is on
//! plain loopback HTTP) and the clients' (the admin in `system:masters`), and the key that
//! signs service-account tokens.

use std::net::{IpAddr, Ipv4Addr};
use std::path::{Path, PathBuf};

use rcgen::{
    BasicConstraints, CertificateParams, DistinguishedName, DnType, ExtendedKeyUsagePurpose, IsCa,
    Issuer, KeyPair, KeyUsagePurpose, SanType,
};

use crate::error::{Result, read, write};

/// A certificate and its key, written as PEM files.
#[derive(Debug, Clone)]
pub struct Pair {
    /// The certificate.
    pub cert: PathBuf,
    /// Its private key.
    pub key: PathBuf,
}

/// The certificate authority of one cluster directory.
pub struct Authority {
    issuer: Issuer<'static, KeyPair>,
    /// Its certificate (`--client-ca-file`, every caBundle).
    pub cert: PathBuf,
}

/// Who a certificate is for.
pub enum Subject<'a> {
    /// A server named `name` on loopback (`localhost` and 127.0.0.1 are always in it) and on
    /// these addresses (the test host's).
    Server(&'a str, &'a [Ipv4Addr]),
    /// A client: user `name` in the groups `groups`.
    Client(&'a str, &'a [&'a str]),
}

impl Authority {
    /// A new authority, written to `dir/ca.crt` and `dir/ca.key`.
    pub fn create(dir: &Path) -> Result<Authority> {
        let key = KeyPair::generate()?;
        let params = ca_params()?;
        let cert = params.self_signed(&key)?;
        let path = dir.join("ca.crt");
        write(&path, cert.pem())?;
        write(&dir.join("ca.key"), key.serialize_pem())?;
        Ok(Authority {
            issuer: Issuer::new(params, key),
            cert: path,
        })
    }

    /// The authority [`Authority::create`] wrote into `dir`.
    pub fn load(dir: &Path) -> Result<Authority> {
        let path = dir.join("ca.crt");
        let key = KeyPair::from_pem(&read(&dir.join("ca.key"))?)?;
        Ok(Authority {
            issuer: Issuer::new(ca_params()?, key),
            cert: path,
        })
    }

    /// A certificate for `subject`, written to `dir/<file>.crt` and `dir/<file>.key`.
    pub fn issue(&self, dir: &Path, file: &str, subject: Subject<'_>) -> Result<Pair> {
        let key = KeyPair::generate()?;
        let mut params = CertificateParams::new(Vec::<String>::new())?;
        let mut dn = DistinguishedName::new();
        params.key_usages = vec![
            KeyUsagePurpose::DigitalSignature,
            KeyUsagePurpose::KeyEncipherment,
        ];
        match subject {
            Subject::Server(name, addresses) => {
                dn.push(DnType::CommonName, name);
                params.subject_alt_names = vec![
                    SanType::DnsName(name.try_into()?),
                    SanType::DnsName("localhost".try_into()?),
                    SanType::IpAddress(IpAddr::V4(Ipv4Addr::LOCALHOST)),
                ];
                params
                    .subject_alt_names
                    .extend(addresses.iter().map(|a| SanType::IpAddress(IpAddr::V4(*a))));
                params.extended_key_usages = vec![ExtendedKeyUsagePurpose::ServerAuth];
            }
            Subject::Client(user, groups) => {
                dn.push(DnType::CommonName, user);
                for g in groups {
                    dn.push(DnType::OrganizationName, *g);
                }
                params.extended_key_usages = vec![ExtendedKeyUsagePurpose::ClientAuth];
            }
        }
        params.distinguished_name = dn;
        let cert = params.signed_by(&key, &self.issuer)?;
        let pair = Pair {
            cert: dir.join(format!("{file}.crt")),
            key: dir.join(format!("{file}.key")),
        };
        write(&pair.cert, cert.pem())?;
        write(&pair.key, key.serialize_pem())?;
        Ok(pair)
    }
}

/// The authority's own certificate's parameters (its name and what it may sign).
fn ca_params() -> Result<CertificateParams> {
    let mut params = CertificateParams::new(Vec::<String>::new())?;
    params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    params.key_usages = vec![
        KeyUsagePurpose::KeyCertSign,
        KeyUsagePurpose::CrlSign,
        KeyUsagePurpose::DigitalSignature,
    ];
    let mut dn = DistinguishedName::new();
    dn.push(DnType::CommonName, "tenancy-policies cluster-e2e CA");
    params.distinguished_name = dn;
    Ok(params)
}

/// The key signing service-account tokens and its public half verifying them, written to
/// `dir/service-account.key` and `dir/service-account.pub`.
pub fn service_account_key(dir: &Path) -> Result<Pair> {
    let key = KeyPair::generate()?;
    let pair = Pair {
        cert: dir.join("service-account.pub"),
        key: dir.join("service-account.key"),
    };
    write(&pair.key, key.serialize_pem())?;
    write(&pair.cert, key.public_key_pem())?;
    Ok(pair)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn issues_server_and_client_certificates_under_one_authority() {
        let dir = std::env::temp_dir().join(format!("control-plane-pki-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let ca = Authority::create(&dir).unwrap();
        let server = ca
            .issue(&dir, "server", Subject::Server("kube-apiserver", &[]))
            .unwrap();
        let client = ca
            .issue(&dir, "admin", Subject::Client("admin", &["system:masters"]))
            .unwrap();
        for p in [&ca.cert, &server.cert, &client.cert] {
            assert!(
                std::fs::read_to_string(p)
                    .unwrap()
                    .starts_with("-----BEGIN CERTIFICATE-----")
            );
        }
        assert!(
            std::fs::read_to_string(&client.key)
                .unwrap()
                .contains("PRIVATE KEY")
        );
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
