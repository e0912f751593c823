//! Compiles `csrc/in_place.c`, which exports MPI's `MPI_IN_PLACE` (a macro of `mpi.h`
//! that rsmpi does not export), against the MPI library that mpi-sys builds with: found
//! the same way (`build_probe_mpi`: the `MPICC` compiler wrapper, e.g.
//! `MPICC=mpicc.mpich` for MPICH, else `mpicc`, else pkg-config).

fn main() {
    println!("cargo:rerun-if-changed=csrc/in_place.c");
    println!("cargo:rerun-if-env-changed=MPICC");
    println!("cargo:rerun-if-env-changed=MPI_PKG_CONFIG");
    let lib = match build_probe_mpi::probe() {
        Ok(lib) => lib,
        Err(errs) => {
            for err in &errs {
                println!("cargo:warning=finding MPI: {err}");
            }
            panic!("hypercomm-mpi needs an MPI library (e.g. apt-get install libopenmpi-dev)");
        }
    };
    let mut build = cc::Build::new();
    build.file("csrc/in_place.c");
    match lib.mpicc {
        Some(mpicc) => {
            build.compiler(mpicc);
        }
        None => {
            build.includes(&lib.include_paths);
        }
    }
    build.compile("hypercomm_mpi_shim");
}
