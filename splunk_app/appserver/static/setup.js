// Setup page: stores the API client secret in storage/passwords (realm = the app id, user = the
// client id) and marks the app configured. Nothing is written to a .conf file by this page.
require(["jquery", "splunkjs/mvc", "splunkjs/mvc/simplexml/ready!"], function ($, mvc) {
    "use strict";
    var APP = "TA-fortra-emailauth";
    var service = mvc.createService({ owner: "nobody", app: APP });

    function status(text) {
        $("#emailauth-status").text(text);
    }

    function markConfigured() {
        service.post("/servicesNS/nobody/system/apps/local/" + APP, { configured: true }, function () {});
    }

    function store(clientId, secret, done) {
        var passwords = service.storagePasswords({ owner: "nobody", app: APP });
        passwords.fetch(function (err) {
            if (err) { return done(err); }
            var existing = passwords.list().filter(function (entry) {
                return entry.properties().realm === APP && entry.properties().username === clientId;
            });
            if (existing.length) {
                existing[0].update({ password: secret }, done);
            } else {
                passwords.create({ name: clientId, realm: APP, password: secret }, done);
            }
        });
    }

    $("#emailauth-save").on("click", function (event) {
        event.preventDefault();
        var clientId = $.trim($("#emailauth-client-id").val());
        var secret = $("#emailauth-client-secret").val();
        if (!clientId || !secret) {
            status("Enter both the client id and the client secret.");
            return;
        }
        status("Saving...");
        store(clientId, secret, function (err) {
            $("#emailauth-client-secret").val("");
            if (err) {
                status("Could not save the secret (HTTP " + (err.status || "error") + "). An admin role is required.");
                return;
            }
            markConfigured();
            status("Saved the secret for client id " + clientId + ".");
        });
    });
});
