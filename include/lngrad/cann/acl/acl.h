// CANN's runtime header ("acl/acl.h") for host mains.
#pragma once
