"""Base images: the Dockerfile beside this file, built from a registry image or, offline, from a
debootstrap root file system. `ensure_base_image` is the entry point."""

from bugforge.images.build import (  # noqa: F401
    BaseImage,
    build_image,
    ensure_base_image,
    find_base_image,
    image_exists,
)
