"""The config edge: validate user mappings once and build the core's plain, frozen inputs."""
