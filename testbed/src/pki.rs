//! What the testbed's API servers authenticate with, made fresh at every start: a certificate authority, one
//! serving certificate for loopback that every server presents, the service-account signing key, and the
//! static token file.

use std::path::{Path, PathBuf};

use anyhow::{Context as _, Result};
use rcgen::{BasicConstraints, CertificateParams, DnType, IsCa, Issuer, KeyPair};

/// The files, in one folder.
#[derive(Debug)]
pub struct Pki {
    dir: PathBuf,
}

impl Pki {
    /// Writes every file into `dir` (created); `admin_token` authenticates as `admin` in `system:masters`.
    pub fn create(dir: &Path, admin_token: &str) -> Result<Self> {
        std::fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
        let pki = Self {
            dir: dir.to_path_buf(),
        };

        let ca_key = KeyPair::generate().context("generating the CA key")?;
        let mut ca = CertificateParams::new(Vec::<String>::new())?;
        ca.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
        ca.distinguished_name
            .push(DnType::CommonName, "Tower testbed CA");
        let ca_cert = ca.self_signed(&ca_key).context("signing the CA")?;
        let issuer = Issuer::new(ca, ca_key);

        // The URLs Tower and the tests use are https://127.0.0.1:<port>; kube-rs checks the IP SAN.
        let serving_key = KeyPair::generate().context("generating the serving key")?;
        let mut serving = CertificateParams::new(vec!["127.0.0.1".into(), "localhost".into()])?;
        serving
            .distinguished_name
            .push(DnType::CommonName, "kube-apiserver");
        let serving_cert = serving
            .signed_by(&serving_key, &issuer)
            .context("signing the serving certificate")?;

        let service_accounts = KeyPair::generate().context("generating the service-account key")?;

        write(&pki.ca_file(), &ca_cert.pem())?;
        write(&pki.serving_cert(), &serving_cert.pem())?;
        write(&pki.serving_key(), &serving_key.serialize_pem())?;
        write(
            &pki.service_account_key(),
            &service_accounts.serialize_pem(),
        )?;
        write(
            &pki.service_account_public(),
            &service_accounts.public_key_pem(),
        )?;
        // token,user,uid,"groups"
        write(
            &pki.tokens(),
            &format!("{admin_token},admin,admin,\"system:masters\"\n"),
        )?;
        Ok(pki)
    }

    /// The certificate authority (PEM).
    pub fn ca_file(&self) -> PathBuf {
        self.dir.join("ca.pem")
    }

    /// Every server's certificate (PEM).
    pub fn serving_cert(&self) -> PathBuf {
        self.dir.join("serving.pem")
    }

    /// Its key (PKCS#8 PEM).
    pub fn serving_key(&self) -> PathBuf {
        self.dir.join("serving-key.pem")
    }

    /// The key service-account tokens are signed with (PKCS#8 PEM).
    pub fn service_account_key(&self) -> PathBuf {
        self.dir.join("service-accounts-key.pem")
    }

    /// Its public half, which the servers verify tokens with.
    pub fn service_account_public(&self) -> PathBuf {
        self.dir.join("service-accounts.pem")
    }

    /// The static token file.
    pub fn tokens(&self) -> PathBuf {
        self.dir.join("tokens.csv")
    }
}

fn write(path: &Path, contents: &str) -> Result<()> {
    std::fs::write(path, contents).with_context(|| format!("writing {}", path.display()))
}
