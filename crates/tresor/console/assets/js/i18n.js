//! The console in French (the default) and English. The screens are written
//! in English; every text they put in the page goes through `tr`, at the one
//! place pages are built (`h` and `setText` in util.js, and the page's own
//! markup at start), and comes out in the operator's language. A text with
//! values in it is matched by its pattern (`{}` stands for a value). The
//! choice is remembered in localStorage; `?lang=en` in the address sets it.

import { pageLanguage } from './language.js';

const STORE_KEY = 'tresor.console.lang';

/** English → French. `{}` in a key matches any value; `{0}`, `{1}` … in the
 * French place the values, in the key's order. */
const FR = {
  // The page's frame, login and navigation.
  'Tresor — operator\'s console': 'Tresor — console de l\'opérateur',
  'Skip to content': 'Aller au contenu',
  'console': 'console',
  'Console': 'Console',
  'Dashboard': 'Tableau de bord',
  'Emissions & blocks': 'Émissions et blocs',
  'Players': 'Joueurs',
  'Queues': 'Files d\'attente',
  'Trail': 'Journal',
  'Site': 'Site',
  'Log out': 'Se déconnecter',
  'Operator\'s console': 'Console de l\'opérateur',
  'Username': 'Identifiant',
  'Password': 'Mot de passe',
  'Continue': 'Continuer',
  'This account has no second factor yet. Scan the code with an authenticator app (TOTP, 6 digits, 30 s), or type the secret into it by hand.':
    'Ce compte n\'a pas encore de second facteur. Scannez le code avec une application d\'authentification (TOTP, 6 chiffres, 30 s), ou saisissez-y le secret à la main.',
  'QR code of the authenticator secret': 'QR code du secret d\'authentification',
  'Secret:': 'Secret :',
  '6-digit code from the authenticator': 'Code à 6 chiffres de l\'application d\'authentification',
  'Log in': 'Se connecter',
  'Start again': 'Recommencer',
  'The code is 6 digits.': 'Le code compte 6 chiffres.',
  'Type your username and password.': 'Saisissez votre identifiant et votre mot de passe.',
  'Your session has ended: log in again.': 'Votre session a pris fin : reconnectez-vous.',
  'viewer': 'lecteur',
  'operator': 'opérateur',
  'auditor': 'auditeur',
  'English': 'English',
  'Français': 'Français',
  'Switch to English': 'Switch to English',
  'Passer en français': 'Passer en français',

  '€0.50': '0,50 €',
  '€1.00': '1,00 €',
  '€2.00': '2,00 €',

  // Shared pieces.
  'Confirm': 'Confirmer',
  'Cancel': 'Annuler',
  'Are you sure?': 'Confirmer ?',
  'Reason (the player sees it)': 'Motif (le joueur le voit)',
  'Give a reason.': 'Indiquez un motif.',
  'Nothing here.': 'Rien ici.',
  'Show the numbers': 'Voir les chiffres',
  'Time': 'Heure',
  'Value': 'Valeur',
  'Period': 'Période',
  'axis x': 'axe x',
  'axis y': 'axe y',
  ' (needs the “{}” permission)': ' (il faut la permission « {0} »)',
  'The server did not answer ({}).': 'Le serveur n\'a pas répondu ({0}).',
  'none': 'aucun',

  // States.
  'open': 'ouvert',
  'suspended': 'suspendu',
  'closed': 'fermé',
  'sold_out': 'épuisé',
  'provisional': 'provisoire',
  'verified': 'vérifié',
  'pending': 'en attente',
  'paid': 'payé',
  'rejected': 'rejeté',
  'cancelled': 'annulé',
  'banned': 'interdit',
  'account closing': 'compte en fermeture',
  'account suspended': 'compte suspendu',
  'Not paid while suspended': 'Non payé tant qu\'il est suspendu',
  'given': 'fournie',

  // The dashboard.
  'Live': 'En direct',
  'Not updating': 'Plus à jour',
  'Paused while the tab is hidden': 'En pause tant que l\'onglet est caché',
  '· updated': '· mis à jour',
  'Purchases per minute, last hour': 'Achats par minute, dernière heure',
  'Stakes taken, prizes won, 70 % expected': 'Mises reçues, gains versés, 70 % attendus',
  'Stakes taken, prizes won and 70 % expected, per stake': 'Mises reçues, gains versés et 70 % attendus, par mise',
  'Database writes': 'Écritures en base',
  'Sales per stake and block': 'Ventes par mise et par bloc',
  'Liability left per level': 'Engagement restant par rang',
  'Purchases': 'Achats',
  'Purchases, last hour': 'Achats, dernière heure',
  'Purchases, this minute': 'Achats, cette minute',
  '{} purchases in the last {} minutes, {} this minute, at most {} in one minute.':
    '{0} achats dans les {1} dernières minutes, {2} cette minute, au plus {3} en une minute.',
  'Stakes taken': 'Mises reçues',
  'Prizes won': 'Gains versés',
  '70 % expected': '70 % attendus',
  '{}, Stakes taken: {}': '{0}, mises reçues : {1}',
  '{}, Prizes won: {}': '{0}, gains versés : {1}',
  '{}, 70 % expected: {}': '{0}, 70 % attendus : {1}',
  'In all: {} taken, {} won, {} expected.': 'En tout : {0} reçus, {1} versés, {2} attendus.',
  'Queue': 'File',
  'Batches': 'Lots',
  'Batch latency p50': 'Latence des lots p50',
  'Batch latency p99': 'Latence des lots p99',
  'Stake': 'Mise',
  'Block': 'Bloc',
  '#{} (emission {})': 'n° {0} (émission {1})',
  'Progress': 'Avancement',
  'Block {}: {} sold': 'Bloc {0} : {1} vendus',
  'Sold': 'Vendus',
  'State': 'État',
  'No block.': 'Aucun bloc.',
  'No stake on sale.': 'Aucune mise en vente.',
  'Sales per block': 'Ventes par bloc',
  'Units sold': 'Unités vendues',
  'Units left': 'Unités restantes',
  'Payout': 'Taux de retour',
  'Stake {}: {} left': 'Mise {0} : {1} restants',
  'Level': 'Rang',
  'Prize': 'Gain',
  'Left': 'Reste',
  'Liability left at stake {}': 'Engagement restant à la mise de {0}',
  'No liability: no block on sale.': 'Aucun engagement : aucun bloc en vente.',

  // Emissions and blocks.
  'New emission': 'Nouvelle émission',
  'Blocks': 'Blocs',
  'Create': 'Créer',
  'Emissions': 'Émissions',
  'Emission': 'Émission',
  'Created': 'Créée',
  'Stakes': 'Mises',
  'Commitment': 'Engagement cryptographique',
  'Secret': 'Secret',
  'not published': 'non publié',
  'Actions': 'Actions',
  'Close…': 'Clore…',
  'Close the emission': 'Clore l\'émission',
  'Suspend…': 'Suspendre…',
  'Suspend': 'Suspendre',
  'Resume…': 'Reprendre…',
  'Resume': 'Reprendre',
  'Re-check': 'Revérifier',
  'No emission yet.': 'Aucune émission pour l\'instant.',
  'Create an emission?': 'Créer une émission ?',
  'Give a whole number of blocks, at least 1.': 'Indiquez un nombre entier de blocs, au moins 1.',
  '{} block of {} at {}, each with a fresh secret; the commitments are public at once.':
    '{0} bloc de {1} à {2}, avec un secret neuf ; les engagements sont publics aussitôt.',
  '{} blocks of {} at {}, each with a fresh secret; the commitments are public at once.':
    '{0} blocs de {1} à {2}, chacun avec un secret neuf ; les engagements sont publics aussitôt.',
  'Game': 'Jeu',
  'Sales and payout by game': 'Ventes et taux de retour par jeu',
  'Table\'s rate': 'Taux de la table',
  'Expected by the table': 'Attendus par la table',
  'Expected by the tables': 'Attendus par les tables',
  'Stakes taken, prizes won, expected by the tables': 'Mises reçues, gains versés, attendus par les tables',
  'Stakes taken, prizes won and expected by the tables, per stake': 'Mises reçues, gains versés et attendus par les tables, par mise',
  '{}, Expected by the tables: {}': '{0}, attendus par les tables : {1}',
  '{}: stakes taken, prizes won and expected by its table, per stake': '{0} : mises reçues, gains versés et attendus par sa table, par mise',
  '{}: {} taken, {} won, payout {} (the table\'s {})': '{0} : {1} reçus, {2} versés, taux de retour {3} (celui de la table : {4})',
  'Sales and payout of {} per stake': 'Ventes et taux de retour de {0} par mise',
  'No game sold yet.': 'Aucun jeu vendu pour l\'instant.',
  '{}, stake {}: {} left': '{0}, mise {1} : {2} restants',
  'Liability left of {} at stake {}': 'Engagement restant de {0} à la mise de {1}',
  'Emission #{} is created.': 'L\'émission n° {0} est créée.',
  'Close emission #{}?': 'Clore l\'émission n° {0} ?',
  'Its sales stop for good and the secrets of its blocks are published. This cannot be undone.':
    'Ses ventes s\'arrêtent définitivement et les secrets de ses blocs sont publiés. C\'est irréversible.',
  'Emission #{} is closed.': 'L\'émission n° {0} est close.',
  'Suspend block #{}?': 'Suspendre le bloc n° {0} ?',
  'Players can no longer buy units of this block until it is resumed.':
    'Les joueurs ne peuvent plus acheter d\'unités de ce bloc jusqu\'à sa reprise.',
  'Block #{} is suspended.': 'Le bloc n° {0} est suspendu.',
  'Resume block #{}?': 'Reprendre le bloc n° {0} ?',
  'Its units go on sale again.': 'Ses unités sont de nouveau en vente.',
  'Block #{} is on sale again.': 'Le bloc n° {0} est de nouveau en vente.',
  '{} / {}': '{0} / {1}',
  'Block {}: {} of {} sold': 'Bloc {0} : {1} vendus sur {2}',
  '{} units{}': '{0} unités{1}',
  ', {} units sold checked': ', {0} unités vendues vérifiées',
  'Block #{} re-checked: the secret matches its commitment, the table and the units sold ({}).':
    'Bloc n° {0} revérifié : le secret correspond à son engagement, au tableau des lots et aux unités vendues ({1}).',

  // Players.
  'Username contains': 'L\'identifiant contient',
  'Search': 'Chercher',
  'Players found': 'Joueurs trouvés',
  'Player': 'Joueur',
  'Player {}': 'Joueur {0}',
  'No player yet.': 'Aucun joueur pour l\'instant.',
  'No player’s username contains “{}”.': 'Aucun identifiant de joueur ne contient « {0} ».',
  'Balance': 'Solde',
  'Status': 'Statut',
  'Opened': 'Ouvert le',
  'Provisional until': 'Provisoire jusqu\'au',
  'Verified': 'Vérifié le',
  'Identity': 'Identité',
  '{} {}, born {}': '{0} {1}, né(e) le {2}',
  'none (demo money)': 'aucune (argent de démonstration)',
  'IBAN': 'IBAN',
  'IBAN given': 'IBAN donné le',
  ' (changed ×{})': ' (modifié ×{0})',
  'Rules accepted': 'Règlement accepté',
  'version {} (in force: {})': 'version {0} (en vigueur : {1})',
  'Deposit cap': 'Plafond de dépôt',
  'Stake cap': 'Plafond de mise',
  'Cap window': 'Période des plafonds',
  '{} days': '{0} jours',
  '{} used of {}, {} left': '{0} utilisés sur {1}, {2} restants',
  '{} used, no cap': '{0} utilisés, sans plafond',
  ' (raise to {} from ': ' (hausse à {0} à partir du ',
  'Excluded until': 'Exclu jusqu\'au',
  'Kept in reserve': 'Mis en réserve',
  'Statement': 'Relevé',
  'When': 'Quand',
  'Movement': 'Mouvement',
  'Amount': 'Montant',
  'Balance after': 'Solde après',
  'Reference': 'Référence',
  'No movement yet.': 'Aucun mouvement pour l\'instant.',
  'Older movements': 'Mouvements plus anciens',
  'Deposit': 'Dépôt',
  'Win': 'Gain',
  'Operator credit': 'Crédit de l\'opérateur',
  'Withdrawal requested': 'Retrait demandé',
  'Withdrawal paid': 'Retrait payé',
  'Withdrawal rejected': 'Retrait rejeté',
  'Withdrawal cancelled': 'Retrait annulé',
  'play {}': 'partie {0}',
  'deposit {}': 'dépôt {0}',
  'withdrawal {}': 'retrait {0}',
  'Mark as verified…': 'Marquer comme vérifié…',
  'Verify': 'Vérifier',
  'Verify…': 'Vérifier…',
  'Verify {}?': 'Vérifier {0} ?',
  '{} is verified.': '{0} est vérifié.',
  'Confirm that the identity documents were checked and that the IBAN {} is in the player\'s name. The account may then withdraw. If the IBAN changed since this page was read, the verification is refused.':
    'Confirmez que les pièces d\'identité ont été contrôlées et que l\'IBAN {0} est au nom du joueur. Le compte pourra alors retirer. Si l\'IBAN a changé depuis la lecture de cette page, la vérification est refusée.',
  'Confirm that the identity documents were checked and that the IBAN {} is in the player\'s name. The account may then withdraw. If the IBAN changed since this list was read, the verification is refused.':
    'Confirmez que les pièces d\'identité ont été contrôlées et que l\'IBAN {0} est au nom du joueur. Le compte pourra alors retirer. Si l\'IBAN a changé depuis la lecture de cette liste, la vérification est refusée.',
  'Credit (€)': 'Crédit (€)',
  'Credit…': 'Créditer…',
  'Credit {}': 'Créditer {0}',
  'Credit {} to {}?': 'Créditer {0} à {1} ?',
  'Give an amount in euros, such as 10 or 10.50.': 'Indiquez un montant en euros, comme 10 ou 10,50.',
  'The money goes to the player’s balance at once, recorded as an operator credit in the statement and the trail.':
    'L\'argent va aussitôt au solde du joueur, inscrit comme crédit de l\'opérateur au relevé et au journal.',
  '{} credited to {}; balance {}.': '{0} crédités à {1} ; solde {2}.',
  'Exclude for': 'Exclure pour',
  'Exclude': 'Exclure',
  'Exclude…': 'Exclure…',
  '7 days': '7 jours',
  '1 month': '1 mois',
  '3 months': '3 mois',
  '6 months': '6 mois',
  '1 year': '1 an',
  'Exclude {} for {}?': 'Exclure {0} pour {1} ?',
  'The player can neither stake nor deposit until the exclusion ends, and every session of theirs ends now. It cannot be shortened.':
    'Le joueur ne peut ni miser ni déposer jusqu\'à la fin de l\'exclusion, et toutes ses sessions prennent fin maintenant. Elle ne peut pas être raccourcie.',
  '{} is excluded for {}.': '{0} est exclu pour {1}.',
  'Change': 'Modifier',
  'Suspended': 'Suspendu',
  'no': 'non',
  'Suspend, because': 'Suspendre, motif',
  'Lift the suspension, because': 'Lever la suspension, motif',
  'Unsuspend': 'Lever la suspension',
  'Unsuspend…': 'Lever la suspension…',
  'Suspend {}?': 'Suspendre {0} ?',
  'Lift the suspension of {}?': 'Lever la suspension de {0} ?',
  '{} is suspended.': '{0} est suspendu.',
  '{} is no longer suspended.': '{0} n\'est plus suspendu.',
  'by {}: {}': 'par {0} : {1}',
  'Every session of the player ends now; logins, deposits and stakes are refused with a neutral message until the suspension is lifted. The reason stays with the staff.':
    'Toutes les sessions du joueur prennent fin maintenant ; connexions, dépôts et mises sont refusés par un message neutre jusqu\'à la levée de la suspension. Le motif reste connu du seul personnel.',
  'Give a reason (3 to 500 characters): the staff read it, the player does not.':
    'Indiquez un motif (3 à 500 caractères) : le personnel le lit, pas le joueur.',
  'The player may log in, deposit and stake again.': 'Le joueur peut de nouveau se connecter, déposer et miser.',

  'Identity document': 'Pièce d\'identité',
  'Proof of IBAN': 'Justificatif d\'IBAN',
  'Documents: ': 'Justificatifs : ',
  'The player reads their balance and statement and may ask for a withdrawal, held until the suspension is lifted; logins are read-only, deposits and stakes are refused. The reason stays with the staff.':
    'Le joueur peut lire son solde et son relevé et demander un retrait, retenu jusqu\'à la levée de la suspension ; ses connexions sont en lecture seule, dépôts et mises sont refusés. Le motif reste connu du seul personnel.',
  'Every session of the player ends now; afterwards the player may log in only to read their balance and statement and ask for a withdrawal, which is held until the suspension is lifted. Deposits and stakes are refused with a neutral message. The reason stays with the staff.':
    'Toutes les sessions du joueur prennent fin maintenant ; ensuite, le joueur ne peut se connecter que pour lire son solde et son relevé et demander un retrait, retenu jusqu\'à la levée de la suspension. Dépôts et mises sont refusés par un message neutre. Le motif reste connu du seul personnel.',
  'The player may deposit and stake again; a withdrawal held may be approved.': 'Le joueur peut de nouveau déposer et miser ; un retrait retenu peut être approuvé.',

  // Queues.
  'ready to verify': 'prêt à vérifier',
  'documents to review': 'justificatifs à examiner',
  'waiting for the player': 'en attente du joueur',
  'nothing sent': 'rien d\'envoyé',
  'Open the PDF': 'Ouvrir le PDF',
  'Open the JPEG photo': 'Ouvrir la photo JPEG',
  'Open the PNG photo': 'Ouvrir la photo PNG',
  'Open the file': 'Ouvrir le fichier',
  'sent as': 'envoyé sous le nom',
  'Provisional accounts to verify': 'Comptes provisoires à vérifier',
  'Withdrawals to approve or reject': 'Retraits à approuver ou rejeter',
  'Provisional accounts': 'Comptes provisoires',
  'Pending withdrawals': 'Retraits en attente',
  'No account waits for verification.': 'Aucun compte n\'attend de vérification.',
  'No withdrawal waits.': 'Aucun retrait n\'attend.',
  'Ban list': 'Liste d\'interdiction',
  'Account': 'Compte',
  'Asked': 'Demandé le',
  'To IBAN': 'Vers l\'IBAN',
  ' changed ×{}': ' modifié ×{0}',
  'Approve…': 'Approuver…',
  'Approve {}': 'Approuver {0}',
  'Approve withdrawal #{}?': 'Approuver le retrait n° {0} ?',
  '{} to {}\'s verified IBAN: confirm the transfer is made. It is recorded as paid out.':
    '{0} vers l\'IBAN vérifié de {1} : confirmez que le virement est fait. Il est inscrit comme payé.',
  'Withdrawal #{} ({}) is paid.': 'Le retrait n° {0} ({1}) est payé.',
  'Reject': 'Rejeter',
  'Reject…': 'Rejeter…',
  'Reject withdrawal #{}?': 'Rejeter le retrait n° {0} ?',
  '{} goes back to {}\'s balance.': '{0} revient au solde de {1}.',
  'Withdrawal #{} is rejected; {} is back on the balance.': 'Le retrait n° {0} est rejeté ; {1} revient au solde.',
  'Later withdrawals': 'Retraits suivants',
  'the player': 'le joueur',
  // Identity documents in the verification queue.
  'Person': 'Personne',
  'Documents': 'Justificatifs',
  'Identity document: ': 'Pièce d\'identité : ',
  'Proof of IBAN: ': 'Justificatif d\'IBAN : ',
  'refused': 'refusé',
  'not sent': 'non envoyé',
  'Open {}': 'Ouvrir {0}',
  'Document verified…': 'Justificatif vérifié…',
  'Document verified': 'Justificatif vérifié',
  'Refuse…': 'Refuser…',
  'Refuse': 'Refuser',
  'Refused: {}': 'Refusé : {0}',
  'Documents first': 'Justificatifs d\'abord',
  'Verify {}\'s document?': 'Vérifier le justificatif de {0} ?',
  'Identity document: confirm that you opened it and that it is in order.':
    'Pièce d\'identité : confirmez que vous l\'avez ouverte et qu\'elle est en règle.',
  'Proof of IBAN: confirm that you opened it and that it is in order.':
    'Justificatif d\'IBAN : confirmez que vous l\'avez ouvert et qu\'il est en règle.',
  'Refuse {}\'s document?': 'Refuser le justificatif de {0} ?',
  'Identity document: the player reads your reason and sends another one.':
    'Pièce d\'identité : le joueur lit votre motif et en envoie une autre.',
  'Proof of IBAN: the player reads your reason and sends another one.':
    'Justificatif d\'IBAN : le joueur lit votre motif et en envoie un autre.',
  '{}\'s document is verified.': 'Le justificatif de {0} est vérifié.',
  '{}\'s document is refused.': 'Le justificatif de {0} est refusé.',

  // The trail.
  'Audit trail': 'Journal d\'audit',
  'Browse the records': 'Parcourir les enregistrements',
  'Actor': 'Auteur',
  'Action': 'Action',
  'From (day, UTC)': 'Du (jour, UTC)',
  'To (day, UTC, included)': 'Au (jour, UTC, inclus)',
  '#': 'N°',
  'Request': 'Demande',
  'Result': 'Résultat',
  'No record matches this search.': 'Aucun enregistrement ne correspond à cette recherche.',
  'Trail records, newest first': 'Enregistrements du journal, les plus récents d\'abord',
  'Older records': 'Enregistrements plus anciens',
  'Head': 'Tête',
  'Records': 'Enregistrements',
  'Head hash': 'Empreinte de tête',
  'Copy': 'Copier',
  'Verification': 'Vérification',
  'Verify now': 'Vérifier maintenant',
  'Export (JSON Lines)': 'Exporter (JSON Lines)',
  'Never verified from the console or the command line.': 'Jamais vérifié depuis la console ou la ligne de commande.',
  'Last verified {} by {}: {} records, {}.': 'Dernière vérification le {0} par {1} : {2} enregistrements, {3}.',
  'intact': 'intact',
  'BROKEN': 'ROMPU',
  'The trail is intact: {} records verified.': 'Le journal est intact : {0} enregistrements vérifiés.',
  'The trail is BROKEN: verification failed after {} records.': 'Le journal est ROMPU : la vérification a échoué après {0} enregistrements.',
  'The head hash is copied.': 'L\'empreinte de tête est copiée.',
  'The browser would not copy: select the hash and copy it by hand.': 'Le navigateur n\'a pas copié : sélectionnez l\'empreinte et copiez-la à la main.',
  'Saved {}: {} records, {} KiB.': '{0} enregistré : {1} enregistrements, {2} Kio.',

  // The site.
  'In force': 'En vigueur',
  'Sales opening time': 'Ouverture des ventes',
  'Sales open at (your local time); empty: open now': 'Ouverture des ventes (heure locale) ; vide : ouvertes maintenant',
  'Save': 'Enregistrer',
  'Open now': 'Ouvrir maintenant',
  'Announcement to players': 'Annonce aux joueurs',
  'Message shown on the players\' site': 'Message affiché sur le site des joueurs',
  'Publish': 'Publier',
  'Remove': 'Retirer',
  'National ban list': 'Liste nationale des interdits de jeu',
  'The list as CSV (': 'La liste en CSV (',
  '); it replaces the list in force, and matching accounts are banned at once': ') ; elle remplace la liste en vigueur, et les comptes correspondants sont interdits aussitôt',
  'Import': 'Importer',
  'Sales': 'Ventes',
  'Announcement': 'Annonce',
  'Rules version in force': 'Version du règlement en vigueur',
  'Sales are open.': 'Les ventes sont ouvertes.',
  'open since ': 'ouvertes depuis le ',
  'open at ': 'ouverture le ',
  'closed after a restore: ': 'fermées après une restauration : ',
  'Apply': 'Appliquer',
  'Change the sales opening time?': 'Modifier l\'heure d\'ouverture des ventes ?',
  'Players can buy from {} (your local time) on; before it, every purchase is refused.':
    'Les joueurs peuvent acheter à partir du {0} (heure locale) ; avant, tout achat est refusé.',
  'The sales opening time is saved.': 'L\'heure d\'ouverture des ventes est enregistrée.',
  'Choose a date and time, or press “Open now”.': 'Choisissez une date et une heure, ou appuyez sur « Ouvrir maintenant ».',
  'Open sales now?': 'Ouvrir les ventes maintenant ?',
  'Players can buy at once.': 'Les joueurs peuvent acheter aussitôt.',
  'Publish this announcement?': 'Publier cette annonce ?',
  'Every player sees: “{}”': 'Chaque joueur voit : « {0} »',
  'The announcement is published.': 'L\'annonce est publiée.',
  'Write a message, or press “Remove”.': 'Écrivez un message, ou appuyez sur « Retirer ».',
  'Remove the announcement?': 'Retirer l\'annonce ?',
  'Players no longer see it.': 'Les joueurs ne la voient plus.',
  'The announcement is removed.': 'L\'annonce est retirée.',
  'Choose the CSV file of the ban list.': 'Choisissez le fichier CSV de la liste d\'interdiction.',
  'Replace the national ban list?': 'Remplacer la liste nationale des interdits de jeu ?',
  '{}: about {} names. Accounts that match are banned at once; accounts no longer listed are lifted.':
    '{0} : environ {1} noms. Les comptes correspondants sont interdits aussitôt ; ceux qui n\'y figurent plus sont levés.',
  'The ban list is imported.': 'La liste d\'interdiction est importée.',
  'Version {}: {} names; banned now: {}; lifted: {}.': 'Version {0} : {1} noms ; interdits maintenant : {2} ; levés : {3}.',
  // Reports (reports.js).
  'Reports': 'Rapports',
  'Figures by period': 'Chiffres par période',
  'Europe/Paris days and months, daylight saving included; reconciled with the ledger.':
    'Jours et mois de Paris, changements d\'heure compris ; rapprochés du grand livre.',
  'By day': 'Par jour',
  'By month': 'Par mois',
  'From': 'Du',
  'To (included)': 'Au (inclus)',
  'Show': 'Afficher',
  'Download CSV': 'Télécharger le CSV',
  'Sales by period and game': 'Ventes par période et par jeu',
  'Money by period': 'Argent par période',
  'Gross gaming yield': 'Produit brut des jeux',
  'Stakes, prizes and yield by period': 'Mises, gains et produit par période',
  'For each period, the stakes taken, the prizes won and the gross gaming yield, in euros.':
    'Pour chaque période, les mises encaissées, les gains et le produit brut des jeux, en euros.',
  'All games': 'Tous les jeux',
  'Units': 'Unités',
  'Total': 'Total',
  'Nothing sold in this range.': 'Rien de vendu sur cette période.',
  'Deposits': 'Dépôts',
  'Withdrawals paid': 'Retraits payés',
  'Prizes paid': 'Gains versés',
  "Players' balances at the end": 'Soldes des joueurs en fin de période',
  'Withdrawals due at the end': 'Retraits dus en fin de période',
  'Reserve of closed accounts': 'Réserve des comptes clos',
  // A game's odds sheet (sheet.js).
  'Odds sheet, from the definition on sale': 'Fiche des chances, d\'après la définition en vente',
  'Stake {}:': 'Mise {0} :',
  '1 in {}': '1 sur {0}',
  'payout {}': 'taux de retour {0}',
  'Chance to win': 'Chance de gagner',
  'Payout rate': 'Taux de retour',
  'Mean prize': 'Gain moyen',
  'Standard deviation': 'Écart type',
  'Top prize': 'Plus gros lot',
  '{} × the stake': '{0} × la mise',
  'Stake back': 'Mise récupérée',
  'A win in 10 units': 'Au moins un gain sur 10 unités',
  'Units per block': 'Unités par bloc',
  'Odds': 'Chances',
  'Exact': 'Valeur exacte',
  'Losing': 'Perdant',
  'Odds at stake {}': 'Chances à la mise de {0}',
  'Prize distribution at stake {}': 'Répartition des lots à la mise de {0}',
  'Each level\'s share of a block\'s winning units and of its prize money, in percent.':
    'La part de chaque rang dans les unités gagnantes d\'un bloc et dans la somme de ses lots, en pour cent.',
  'Share of the winning units': 'Part des unités gagnantes',
  'Share of the prize money': 'Part de la somme des lots',
};

/** The API's refusals by their stable code (`src/http/error.rs`), in
 * French: the server's own message is English, kept for the English page
 * and, on the French one, in the notice's `title`. */
const ERRORS_FR = {
  validation: 'Valeur refusée : vérifiez la saisie.',
  unauthorized: 'Votre session a pris fin : reconnectez-vous.',
  invalid_credentials: 'Identifiant ou mot de passe incorrect.',
  invalid_code: 'Code incorrect ou expiré : saisissez le code affiché maintenant.',
  forbidden: 'Votre rôle ne permet pas cette action.',
  not_found: 'Introuvable : la donnée n\'existe pas ou plus.',
  csrf: 'Requête refusée (en-tête de sécurité absent) : rechargez la page.',
  invalid_json: 'Requête mal formée : rechargez la page.',
  rate_limited: 'Trop de tentatives : patientez avant de réessayer.',
  four_eyes: 'Principe des quatre yeux : une autre personne que celle qui a crédité ou vérifié ce compte doit approuver.',
  credit_limit_reached: 'Plafond des crédits de l\'opérateur atteint pour ce compte.',
  iban_changed: 'L\'IBAN a changé depuis votre lecture : examinez le nouvel IBAN avant de vérifier.',
  withdrawal_not_pending: 'Ce retrait est déjà réglé (payé, rejeté ou annulé).',
  documents_required: 'Les justificatifs du compte ne sont pas tous vérifiés : vérifiez d\'abord la pièce d\'identité et le justificatif d\'IBAN.',
  document_decided: 'Ce justificatif a déjà été examiné.',
  iban_proof_outdated: 'Ce justificatif d\'IBAN porte sur un IBAN remplacé depuis.',
  account_suspended: 'Ce compte est suspendu : l\'action est retenue jusqu\'à la levée de la suspension.',
  account_closed: 'Ce compte est clos.',
  not_verified: 'Ce compte n\'est pas encore vérifié.',
  banned: 'Cette personne est sur la liste des interdits de jeu.',
  duplicate_account: 'Second compte d\'une même personne : il ne reçoit ni dépôt ni mise.',
  exclusion_cannot_be_shortened: 'Une exclusion en cours ne peut pas être raccourcie.',
  insufficient_funds: 'Solde insuffisant.',
  sales_closed: 'Les ventes sont fermées.',
  sales_closed_after_restore: 'Les ventes sont retenues après une restauration.',
  sold_out: 'Plus aucune unité en vente à cette mise.',
  unavailable: 'Service momentanément indisponible : rien n\'a été modifié, réessayez dans un instant.',
  storage_full: 'Disque plein : rien n\'a été modifié.',
  log_does_not_hold: 'Le journal signé ne peut plus être prolongé : rien n\'a été modifié.',
  not_ready: 'Le serveur n\'est pas prêt : réessayez dans un instant.',
  internal: 'Erreur interne du serveur.',
  network: 'Le serveur ne répond pas : vérifiez la connexion et réessayez.',
};

/** An API refusal in the operator's language: French from its code, else
 * the server's message (English). */
export function errorText(failure) {
  const message = failure?.message ?? String(failure);
  if (currentLang() !== 'fr') return message;
  // The page's own refusals (no HTTP status) are written in English, translated as any text.
  if (failure?.status === undefined) return tr(message);
  return ERRORS_FR[failure.code] ?? tr(message);
}

const EXACT = new Map();
const PATTERNS = [];
for (const [key, value] of Object.entries(FR)) {
  const [english, french] = [key.trim(), value.trim()];
  if (english.includes('{}')) {
    const parts = english.split('{}').map((part) => part.replace(/[.*+?^${}()|[\]\\]/g, '\\$&'));
    PATTERNS.push([new RegExp(`^${parts.join('([\\s\\S]*?)')}$`), french]);
  } else {
    EXACT.set(english, french);
  }
}

function initialLang() {
  const asked = new URLSearchParams(location.search).get('lang');
  if (asked === 'en' || asked === 'fr') {
    try {
      localStorage.setItem(STORE_KEY, asked);
    } catch {
      // Private mode: the choice lasts for this page only.
    }
    return asked;
  }
  try {
    return localStorage.getItem(STORE_KEY) === 'en' ? 'en' : 'fr';
  } catch {
    return 'fr';
  }
}

const language = pageLanguage(STORE_KEY, initialLang(), () => applyStatic(document));

/** The operator's language, `fr` or `en`. */
export function currentLang() {
  return language.current();
}

/** The locale numbers and dates are written in. */
export function locale() {
  return currentLang() === 'fr' ? 'fr-FR' : 'en-GB';
}

/** Sets the language, remembers it and calls every listener. */
export function setLang(next) {
  language.set(next);
}

/** Calls `fn` after every change of language. */
export function onLangChange(fn) {
  language.onChange(fn);
}

/** `text` (English, as the screens write it) in the operator's language.
 * Leading and trailing spaces are kept; an unknown text stays as it is. */
export function tr(text) {
  if (currentLang() === 'en' || typeof text !== 'string') return text;
  const core = text.trim();
  if (!core) return text;
  const lead = text.slice(0, text.indexOf(core));
  const trail = text.slice(lead.length + core.length);
  const exact = EXACT.get(core);
  if (exact !== undefined) return lead + exact + trail;
  for (const [pattern, french] of PATTERNS) {
    const match = pattern.exec(core);
    if (match) return lead + french.replace(/\{(\d)\}/g, (_, i) => match[Number(i) + 1]) + trail;
  }
  return text;
}

/** Each text node's English, so that a change of language writes it again. */
const ENGLISH = new WeakMap();
const ATTRIBUTES = ['aria-label', 'alt', 'title', 'placeholder'];

/** A text node for `english`, shown in the operator's language. */
export function textNode(english) {
  const node = document.createTextNode(tr(english));
  ENGLISH.set(node, english);
  return node;
}

/** Text nodes of data (names, actors, file names), never translated. */
const DATA = new WeakSet();

/** A text node for `value`, data shown as it is in every language. */
export function dataNode(value) {
  const node = document.createTextNode(String(value ?? ''));
  DATA.add(node);
  return node;
}

/** Sets `node`'s text to `english`, in the operator's language. */
export function setText(node, english) {
  node.replaceChildren(textNode(english));
}

/** Sets attribute `name` of `node` to `english`, in the operator's language. */
export function setAttr(node, name, english) {
  node.setAttribute(`data-en-${name}`, english);
  node.setAttribute(name, tr(english));
}

/** Writes every text and labelling attribute under `root` again in the
 * operator's language (the page's own markup at start; all of it after a
 * change). Code and user data typed by people are left alone. */
export function applyStatic(root) {
  document.documentElement.lang = currentLang();
  const walker = document.createTreeWalker(root.body ?? root, NodeFilter.SHOW_TEXT, {
    acceptNode: (node) => (node.parentElement?.closest('code, script, style, [data-no-tr]') ? NodeFilter.FILTER_REJECT : NodeFilter.FILTER_ACCEPT),
  });
  for (let node = walker.nextNode(); node; node = walker.nextNode()) {
    if (DATA.has(node)) continue;
    if (!ENGLISH.has(node)) ENGLISH.set(node, node.data);
    const text = tr(ENGLISH.get(node));
    if (node.data !== text) node.data = text;
  }
  for (const element of (root.body ?? root).querySelectorAll(ATTRIBUTES.map((a) => `[${a}]`).join(','))) {
    for (const name of ATTRIBUTES) {
      if (!element.hasAttribute(name)) continue;
      if (!element.hasAttribute(`data-en-${name}`)) element.setAttribute(`data-en-${name}`, element.getAttribute(name));
      element.setAttribute(name, tr(element.getAttribute(`data-en-${name}`)));
    }
  }
  if (!document.documentElement.dataset.enTitle) document.documentElement.dataset.enTitle = document.title;
  document.title = tr(document.documentElement.dataset.enTitle);
}
